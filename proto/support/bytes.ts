/** Byte-for-byte equality of encoded messages, used to skip sending an update that changed nothing. */
export function sameBytes(a: Uint8Array | undefined, b: Uint8Array): boolean {
  if (a === b) return true;
  if (!a || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
