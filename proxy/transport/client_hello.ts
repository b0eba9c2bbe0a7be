/**
 * Just enough TLS ClientHello parsing to route a connection: is it TLS, and which SNI and ALPN
 * does it ask for. Works on the first bytes of a connection, possibly incomplete.
 */

export type HelloParse =
  | { kind: "not_tls" }
  | { kind: "incomplete" }
  | { kind: "tls"; sni: string | undefined; alpn: string[] };

/** Larger hellos are not expected from proxies; Linkerd also gives up after 8 KiB. */
export const MAX_HELLO_BYTES = 8192;

export function parseClientHello(buf: Uint8Array): HelloParse {
  if (buf.length === 0) return { kind: "incomplete" };
  if (buf[0] !== 0x16) return { kind: "not_tls" };
  if (buf.length < 5) return { kind: "incomplete" };
  if (buf[1] !== 0x03) return { kind: "not_tls" };
  // Reassemble handshake bytes across records (a hello may span several).
  const hs: number[] = [];
  let off = 0;
  let need = -1;
  while (off + 5 <= buf.length) {
    if (buf[off] !== 0x16) return { kind: "not_tls" };
    const len = (buf[off + 3] << 8) | buf[off + 4];
    const end = off + 5 + len;
    const slice = buf.subarray(off + 5, Math.min(end, buf.length));
    for (const b of slice) hs.push(b);
    if (need < 0 && hs.length >= 4) {
      if (hs[0] !== 0x01) return { kind: "not_tls" };
      need = 4 + ((hs[1] << 16) | (hs[2] << 8) | hs[3]);
    }
    if (need >= 0 && hs.length >= need) break;
    if (end > buf.length) return { kind: "incomplete" };
    off = end;
  }
  if (need < 0 || hs.length < need) return { kind: "incomplete" };
  return parseHelloBody(Uint8Array.from(hs.slice(4, need)));
}

function parseHelloBody(b: Uint8Array): HelloParse {
  const bad: HelloParse = { kind: "not_tls" };
  let p = 2 + 32; // legacy_version, random
  if (p >= b.length) return bad;
  p += 1 + b[p]; // session id
  if (p + 2 > b.length) return bad;
  p += 2 + ((b[p] << 8) | b[p + 1]); // cipher suites
  if (p >= b.length) return bad;
  p += 1 + b[p]; // compression methods
  let sni: string | undefined;
  const alpn: string[] = [];
  if (p + 2 > b.length) return { kind: "tls", sni, alpn };
  const extEnd = Math.min(b.length, p + 2 + ((b[p] << 8) | b[p + 1]));
  p += 2;
  while (p + 4 <= extEnd) {
    const type = (b[p] << 8) | b[p + 1];
    const len = (b[p + 2] << 8) | b[p + 3];
    const body = b.subarray(p + 4, Math.min(p + 4 + len, extEnd));
    p += 4 + len;
    if (type === 0 && body.length >= 5 && body[2] === 0) {
      const nameLen = (body[3] << 8) | body[4];
      sni = new TextDecoder().decode(body.subarray(5, 5 + nameLen));
    } else if (type === 16 && body.length >= 2) {
      let q = 2;
      while (q < body.length) {
        const l = body[q];
        alpn.push(new TextDecoder().decode(body.subarray(q + 1, q + 1 + l)));
        q += 1 + l;
      }
    }
  }
  return { kind: "tls", sni, alpn };
}
