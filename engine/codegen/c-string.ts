// C string literals of arbitrary bytes, for names that go into generated C (tensor names
// in model.c's tt_tensor_info tables). Letters, digits and a few punctuation characters
// stay as they are; every other byte is a three-digit octal escape (`:` is `\072`). Octal
// escapes end after three digits, unlike `\x..`, which swallows every hex digit after it
// (`"x\x3a0"` is one byte 0x3a0, not `x:0`). `?` is escaped too, so no trigraph (`??/`)
// is formed under -std=c11.

/** Bytes written as themselves: [A-Za-z0-9] and `_ . - / space`. */
const PLAIN = /^[A-Za-z0-9_./ -]$/;

/** A C string literal holding exactly `bytes` (1..255 each; C strings cannot hold NUL). */
export function cString(bytes: Uint8Array): string {
  let body = '';
  for (const b of bytes) {
    if (b === 0) throw new Error('cString: a C string cannot hold a NUL byte');
    const c = String.fromCharCode(b);
    body += b < 0x80 && PLAIN.test(c) ? c : `\\${b.toString(8).padStart(3, '0')}`;
  }
  return `"${body}"`;
}

/** The UTF-8 bytes of a name (what `cString` and the native side see). */
export const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
