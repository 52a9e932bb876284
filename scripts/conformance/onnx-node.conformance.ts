// npm test's conformance step (package.json test:conformance, scripts/test.js): the ONNX
// backend node test cases of the pinned onnx package, every one imported, compiled with the
// default schedules and run natively (engine/conformance/suite.ts). It fails when a case that passed in
// scripts/conformance/baseline.json no longer passes, or when a case comes out wrong,
// crashes or hangs that the baseline does not list as known; it is skipped without python3
// and the pinned onnx. `npm run conformance -- --update-baseline` rewrites the baseline.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { skip } from '../../engine/skip.fixture';
import { runSuite } from '../../engine/conformance/suite';

const NAME = 'ONNX node conformance: every case that passed in the baseline passes, none wrong, crashed or hung';

test(NAME, async () => {
  const result = await runSuite();
  if ('skipped' in result) {
    skip(NAME, result.skipped);
    return;
  }
  assert.ok(result.check, 'scripts/conformance/baseline.json is missing (npm run conformance -- --update-baseline writes it)');
  const { regressions, unexpected } = result.check;
  if (!result.check.ok) {
    const cases = [...regressions.map((r) => `regression: ${r.name}: now ${r.outcome}: ${r.reason ?? ''}`), ...unexpected.map((r) => `${r.outcome}: ${r.name}: ${r.reason ?? ''}`)];
    assert.unreachable(`${regressions.length} regression(s), ${unexpected.length} new wrong/crashed/hung case(s):\n${cases.join('\n')}`);
  }
});

test.run();
