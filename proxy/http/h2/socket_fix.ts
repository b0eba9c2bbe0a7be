/**
 * Deno 2.9.6 leaves `secureConnecting` true on a server-side `new tls.TLSSocket(socket)` after
 * the handshake; node:http2 then waits for a 'secureConnect' that never comes and the session
 * hangs without an error. Sockets handed to the HTTP/2 layer are established by contract, so a
 * true flag there is stale and is cleared.
 */
import type * as net from "node:net";

export function clearStaleSecureConnecting(socket: net.Socket): void {
  const s = socket as net.Socket & { secureConnecting?: boolean; encrypted?: boolean };
  if (s.encrypted && s.secureConnecting === true) {
    Object.defineProperty(s, "secureConnecting", { value: false, writable: true, configurable: true });
  }
}
