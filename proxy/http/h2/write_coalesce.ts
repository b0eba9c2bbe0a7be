/**
 * Coalesces a socket's writes within one tick into one send.
 *
 * Deno 2.9.6's node:http2 writes every frame nghttp2 produces with its own `socket.write`, so a
 * small gRPC response costs three send(2) calls (HEADERS, DATA, trailers); under load the proxy
 * spent over a third of its time in send. Corking on the first write of a tick and uncorking in
 * the next microtask turn hands the frames to the socket as one writev, without delaying them
 * past the current turn.
 */
import type * as net from "node:net";

export function coalesceWrites(socket: net.Socket): void {
  let corked = false;
  const uncork = () => {
    corked = false;
    if (!socket.destroyed) socket.uncork();
  };
  const write = socket.write;
  socket.write = function (this: net.Socket, ...args: Parameters<net.Socket["write"]>): boolean {
    if (!corked && !socket.destroyed) {
      corked = true;
      socket.cork();
      process.nextTick(uncork);
    }
    return write.apply(this, args);
  } as net.Socket["write"];
}
