/** TCP listeners for the proxy's inbound and outbound ports. */
import * as net from "node:net";
import type { ListenAddr } from "../config/parse.ts";

export interface Listener {
  addr: { ip: string; port: number };
  /** Stops accepting; established connections are left alone (the drain closes them). */
  close(): Promise<void>;
}

export function listenTcp(addr: ListenAddr, onConn: (sock: net.Socket) => void): Promise<Listener> {
  return new Promise((resolve, reject) => {
    const server = net.createServer({ noDelay: true, allowHalfOpen: true }, onConn);
    server.once("error", reject);
    server.listen({ host: addr.ip, port: addr.port, backlog: 1024 }, () => {
      server.off("error", reject);
      const a = server.address() as net.AddressInfo;
      resolve({
        addr: { ip: a.address, port: a.port },
        // server.close() stops accepting at once; its callback would wait for every connection
        // to end, which is the drain's job (waiting here kept shutdown from starting the drain).
        close: () => {
          server.close();
          return Promise.resolve();
        },
      });
    });
  });
}
