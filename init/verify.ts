/**
 * Verify mode: proves the outbound redirect works by connecting to a probe address and checking
 * that the connection arrives at the outbound proxy port carrying that address as its original
 * destination (SO_ORIGINAL_DST). It binds the proxy port itself, so it runs before the proxy starts
 * (as the last step of init, or as a pod readiness gate before the sidecar).
 */
import { InitError } from "./backend.ts";

export interface VerifyOptions {
  outgoingProxyPort: number;
  probe: { ip: string; port: number };
  timeoutMs: number;
}

const SYMBOLS = {
  getsockname: { parameters: ["i32", "buffer", "buffer"], result: "i32" },
  getsockopt: { parameters: ["i32", "i32", "i32", "buffer", "buffer"], result: "i32" },
} as const;

function sockaddrIn(buf: Uint8Array): { ip: string; port: number } | undefined {
  const v = new DataView(buf.buffer);
  if (v.getUint16(0, true) !== 2) return undefined; // AF_INET
  return { ip: `${buf[4]}.${buf[5]}.${buf[6]}.${buf[7]}`, port: v.getUint16(2, false) };
}

/** SO_ORIGINAL_DST of every socket of this process bound locally to `port` (the accepted side). */
function origDstsOnPort(port: number): { ip: string; port: number }[] {
  const lib = Deno.dlopen("libc.so.6", SYMBOLS);
  try {
    const buf = new Uint8Array(128);
    const len = new Uint8Array(4);
    const lenView = new DataView(len.buffer);
    const out: { ip: string; port: number }[] = [];
    for (const e of Deno.readDirSync("/proc/self/fd")) {
      const fd = Number(e.name);
      lenView.setUint32(0, buf.length, true);
      if (lib.symbols.getsockname(fd, buf, len) !== 0 || sockaddrIn(buf)?.port !== port) continue;
      lenView.setUint32(0, buf.length, true);
      if (lib.symbols.getsockopt(fd, 0, /* SOL_IP */ 80, /* SO_ORIGINAL_DST */ buf, len) !== 0) continue;
      const dst = sockaddrIn(buf);
      if (dst) out.push(dst);
    }
    return out;
  } finally {
    lib.close();
  }
}

/** Reads the gateway of the IPv4 default route from /proc/net/route text. */
export function defaultGateway(procNetRoute: string): string | undefined {
  for (const line of procNetRoute.split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 3 || f[1] !== "00000000") continue;
    const g = parseInt(f[2], 16);
    if (!Number.isFinite(g) || g === 0) continue;
    // The file holds the address in host (little-endian) byte order.
    return [g & 0xff, (g >>> 8) & 0xff, (g >>> 16) & 0xff, g >>> 24].join(".");
  }
  return undefined;
}

export async function verifyRedirect(opts: VerifyOptions): Promise<void> {
  let listener: Deno.Listener;
  try {
    listener = Deno.listen({ hostname: "127.0.0.1", port: opts.outgoingProxyPort });
  } catch (e) {
    throw new InitError(
      `verify: cannot listen on 127.0.0.1:${opts.outgoingProxyPort} (${(e as Error).message}); ` +
        "verify must run before the proxy takes that port",
    );
  }
  const nonce = crypto.getRandomValues(new Uint8Array(16));
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  let client: Deno.Conn | undefined;
  let accepted: Deno.Conn | undefined;
  const target = `${opts.probe.ip}:${opts.probe.port}`;
  const timer = new Promise<never>((_, reject) =>
    timeout.addEventListener(
      "abort",
      () =>
        reject(
          new InitError(`verify: nothing arrived on port ${opts.outgoingProxyPort} for ${target} in time`),
        ),
    )
  );
  timer.catch(() => {});
  try {
    const acceptP = listener.accept();
    const connectP = Deno.connect({ hostname: opts.probe.ip, port: opts.probe.port });
    client = await Promise.race([connectP, timer]).catch((e) => {
      connectP.then((c) => c.close(), () => {});
      throw e instanceof InitError
        ? e
        : new InitError(`verify: connection to ${target} was not redirected: ${(e as Error).message}`);
    });
    await client.write(nonce);
    accepted = await Promise.race([acceptP, timer]);
    const got = new Uint8Array(16);
    let n = 0;
    while (n < 16) {
      const r = await Promise.race([accepted.read(got.subarray(n)), timer]);
      if (r === null) break;
      n += r;
    }
    if (n !== 16 || !got.every((b, i) => b === nonce[i])) {
      throw new InitError(`verify: the connection on port ${opts.outgoingProxyPort} is not the probe`);
    }
    const dsts = origDstsOnPort(opts.outgoingProxyPort);
    if (!dsts.some((d) => d.ip === opts.probe.ip && d.port === opts.probe.port)) {
      throw new InitError(
        `verify: probe arrived but its original destination is ${JSON.stringify(dsts)}, want ${target}`,
      );
    }
  } finally {
    client?.close();
    accepted?.close();
    listener.close();
  }
}
