// A self-hosted Nx remote cache for the e2e suite: Nx's documented HTTP protocol
// (GET / PUT /v1/cache/{hash}, bodies are opaque octet streams, 404 on a miss, 409 when
// a hash is written twice), in memory, on 127.0.0.1. Nx is pointed at it with
// NX_SELF_HOSTED_REMOTE_CACHE_SERVER.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface CacheServer {
  url: string;
  /** Every request as "METHOD hash status". */
  log: string[];
  close(): Promise<void>;
}

export async function startCacheServer(token?: string): Promise<CacheServer> {
  const entries = new Map<string, Buffer>();
  const log: string[] = [];
  const server: Server = createServer((req, res) => {
    const m = /^\/v1\/cache\/([A-Za-z0-9._-]+)$/.exec(req.url ?? '');
    const answer = (status: number, body?: Buffer): void => {
      log.push(`${req.method} ${m?.[1] ?? req.url} ${status}`);
      res.statusCode = status;
      if (body) res.setHeader('Content-Type', 'application/octet-stream');
      res.end(body);
    };
    if (!m) return answer(404);
    if (token && req.headers.authorization !== `Bearer ${token}`) return answer(401);
    const hash = m[1];
    if (req.method === 'GET') {
      const body = entries.get(hash);
      return body ? answer(200, body) : answer(404);
    }
    if (req.method === 'PUT') {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (entries.has(hash)) return answer(409);
        entries.set(hash, Buffer.concat(chunks));
        answer(200);
      });
      return;
    }
    answer(405);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    log,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
