/** A Secret's `data` value (base64) as UTF-8 text. Throws on invalid base64. */
export function secretText(b64: string): string {
  return new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));
}
