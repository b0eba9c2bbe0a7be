/**
 * The original destination of a redirected connection. Deno exposes no SO_ORIGINAL_DST, so the
 * Linux implementation asks the kernel through libc on the accepted socket's fd. Deno's TCP handle
 * hands out a duplicate of that fd (`fdForIpc`, meant for passing sockets to child processes),
 * which is used and closed at once; where the runtime has no such method, the fd is found by
 * matching the socket's peer and local port among /proc/self/fd (a scan that grows with the
 * number of open connections). This runs once per accepted connection, never on the byte path.
 */

export interface SocketAddr {
  ip: string;
  port: number;
}

/** What the lookup needs to know about an accepted socket. */
export interface AcceptedSocket {
  remoteAddress?: string;
  remotePort?: number;
  localAddress?: string;
  localPort?: number;
  /** When present, lets the lookup learn which fd numbers free up (sockets are event emitters). */
  once?(event: "close", cb: () => void): unknown;
}

/** Deno's native TCP handle under a node:net socket, as far as the lookup uses it. */
interface DupableHandle {
  /** A new fd for the same socket (the caller owns it and must close it). */
  fdForIpc(): number;
}

export interface OrigDst {
  /** The address the client dialled; throws OrigDstError when it cannot be known. */
  lookup(sock: AcceptedSocket): SocketAddr;
}

export class OrigDstError extends Error {
  override name = "OrigDstError";
}

/** Strips the IPv4-mapped prefix so `::ffff:10.0.0.1` and `10.0.0.1` compare equal. */
export function normalizeIp(ip: string): string {
  return ip.toLowerCase().startsWith("::ffff:") && ip.includes(".") ? ip.slice(7) : ip.toLowerCase();
}

/** For listeners that are not behind a redirect (tests, direct binds): the socket's own address. */
export const localAddrOrigDst: OrigDst = {
  lookup(sock) {
    if (sock.localAddress === undefined || sock.localPort === undefined) {
      throw new OrigDstError("socket has no local address");
    }
    return { ip: normalizeIp(sock.localAddress), port: sock.localPort };
  },
};

const AF_INET = 2;
const AF_INET6 = 10;
const SOL_IP = 0;
const SOL_IPV6 = 41;
const SO_ORIGINAL_DST = 80; // IP6T_SO_ORIGINAL_DST has the same value.

/** Decodes a struct sockaddr_in / sockaddr_in6 (family in host order, port big-endian). */
export function decodeSockaddr(buf: Uint8Array): SocketAddr | undefined {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const family = view.getUint16(0, true);
  const port = view.getUint16(2, false);
  if (family === AF_INET) {
    return { ip: `${buf[4]}.${buf[5]}.${buf[6]}.${buf[7]}`, port };
  }
  if (family === AF_INET6) {
    const groups: string[] = [];
    for (let i = 0; i < 8; i++) groups.push(view.getUint16(8 + 2 * i, false).toString(16));
    return { ip: normalizeIp(compressIpv6(groups)), port };
  }
  return undefined;
}

function compressIpv6(groups: string[]): string {
  if (groups.slice(0, 5).every((g) => g === "0") && groups[5] === "ffff") {
    const a = parseInt(groups[6], 16), b = parseInt(groups[7], 16);
    return `::ffff:${a >> 8}.${a & 0xff}.${b >> 8}.${b & 0xff}`;
  }
  let best = -1, bestLen = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== "0") {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === "0") j++;
    if (j - i > bestLen) [best, bestLen] = [i, j - i];
    i = j;
  }
  if (best < 0) return groups.join(":");
  return `${groups.slice(0, best).join(":")}::${groups.slice(best + bestLen).join(":")}`;
}

const LIBC_SYMBOLS = {
  getpeername: { parameters: ["i32", "buffer", "buffer"], result: "i32" },
  getsockname: { parameters: ["i32", "buffer", "buffer"], result: "i32" },
  getsockopt: { parameters: ["i32", "i32", "i32", "buffer", "buffer"], result: "i32" },
  close: { parameters: ["i32"], result: "i32" },
} as const;

/** SO_ORIGINAL_DST through libc; construct once per process (dlopen is not free). */
export class LinuxOrigDst implements OrigDst {
  #lib: Deno.DynamicLibrary<typeof LIBC_SYMBOLS>;
  #addr = new Uint8Array(128);
  #len = new Uint8Array(4);
  #lenView = new DataView(this.#len.buffer);
  /**
   * fd numbers of accepted sockets that have since closed. Linux hands out the lowest free fd,
   * so the next accepted socket usually reuses one of these; trying them first avoids a scan.
   */
  #freed: number[] = [];

  constructor(libcPath = "libc.so.6") {
    this.#lib = Deno.dlopen(libcPath, LIBC_SYMBOLS);
  }

  close(): void {
    this.#lib.close();
  }

  #call(fn: "getpeername" | "getsockname", fd: number): SocketAddr | undefined {
    this.#lenView.setUint32(0, this.#addr.length, true);
    if (this.#lib.symbols[fn](fd, this.#addr, this.#len) !== 0) return undefined;
    return decodeSockaddr(this.#addr);
  }

  #matches(fd: number, peerIp: string, peerPort: number, localPort: number): boolean {
    const peer = this.#call("getpeername", fd);
    if (peer === undefined || peer.port !== peerPort || normalizeIp(peer.ip) !== peerIp) return false;
    const local = this.#call("getsockname", fd);
    return local !== undefined && local.port === localPort;
  }

  /** The fd of the accepted socket, or undefined. */
  findFd(sock: AcceptedSocket): number | undefined {
    if (sock.remoteAddress === undefined || sock.remotePort === undefined || sock.localPort === undefined) {
      return undefined;
    }
    const ip = normalizeIp(sock.remoteAddress);
    for (let i = 0; i < this.#freed.length; i++) {
      const fd = this.#freed[i];
      if (this.#matches(fd, ip, sock.remotePort, sock.localPort)) {
        this.#freed.splice(i, 1);
        return fd;
      }
    }
    const fds: number[] = [];
    for (const e of Deno.readDirSync("/proc/self/fd")) fds.push(Number(e.name));
    // Highest first: without a free hole, a fresh accept gets the highest number.
    fds.sort((a, b) => b - a);
    for (const fd of fds) {
      if (this.#matches(fd, ip, sock.remotePort, sock.localPort)) return fd;
    }
    return undefined;
  }

  #noteFreed(fd: number): void {
    if (this.#freed.includes(fd)) return;
    this.#freed.push(fd);
    this.#freed.sort((a, b) => a - b);
    if (this.#freed.length > 64) this.#freed.pop();
  }

  /** SO_ORIGINAL_DST of a known fd. */
  origDstOfFd(fd: number, v6: boolean): SocketAddr {
    this.#lenView.setUint32(0, this.#addr.length, true);
    const rc = this.#lib.symbols.getsockopt(
      fd,
      v6 ? SOL_IPV6 : SOL_IP,
      SO_ORIGINAL_DST,
      this.#addr,
      this.#len,
    );
    if (rc !== 0) throw new OrigDstError(`getsockopt(SO_ORIGINAL_DST) failed on fd ${fd} (no NAT entry?)`);
    const addr = decodeSockaddr(this.#addr);
    if (addr === undefined) throw new OrigDstError(`getsockopt(SO_ORIGINAL_DST) returned an unknown family`);
    return addr;
  }

  /**
   * A duplicate of the socket's own fd from Deno's TCP handle, or undefined when the runtime has
   * none. The caller closes it.
   */
  dupFd(sock: AcceptedSocket): number | undefined {
    const h = (sock as { _handle?: Partial<DupableHandle> | null })._handle;
    if (typeof h?.fdForIpc !== "function") return undefined;
    let fd: unknown;
    try {
      fd = h.fdForIpc();
    } catch {
      return undefined;
    }
    return typeof fd === "number" && Number.isInteger(fd) && fd >= 0 ? fd : undefined;
  }

  /** findFd, remembering the fd for reuse once the socket closes. */
  track(sock: AcceptedSocket): number | undefined {
    const fd = this.findFd(sock);
    if (fd !== undefined) sock.once?.("close", () => this.#noteFreed(fd));
    return fd;
  }

  lookup(sock: AcceptedSocket): SocketAddr {
    // IPv4 and IPv4-mapped clients keep their NAT entry in the IPv4 table.
    const v6 = (sock.remoteAddress ?? "").includes(":") &&
      !normalizeIp(sock.remoteAddress ?? "").includes(".");
    const dup = this.dupFd(sock);
    if (dup !== undefined) {
      try {
        // The duplicate is this very socket; the address check guards against a runtime whose
        // fdForIpc means something else (then the scan below decides).
        if (
          sock.remoteAddress !== undefined && sock.remotePort !== undefined &&
          sock.localPort !== undefined &&
          this.#matches(dup, normalizeIp(sock.remoteAddress), sock.remotePort, sock.localPort)
        ) {
          return this.origDstOfFd(dup, v6);
        }
      } finally {
        this.#lib.symbols.close(dup);
      }
    }
    const fd = this.track(sock);
    if (fd === undefined) {
      throw new OrigDstError(
        `no fd found for the connection from ${sock.remoteAddress}:${sock.remotePort} to port ${sock.localPort}`,
      );
    }
    return this.origDstOfFd(fd, v6);
  }
}
