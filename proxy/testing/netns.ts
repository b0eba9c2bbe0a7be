/**
 * Network namespaces for data-path tests: "pods" joined by a bridge that lives in its own hub
 * namespace, so nothing is added to the host's namespace and no address routes off the machine.
 * Every namespace, and with it every veth and rule inside, is deleted by `cleanup()`; processes
 * the harness started are killed by their own pid first.
 */

export interface Pod {
  name: string;
  ns: string;
  ip: string;
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export async function sh(cmd: string, args: string[], check = true): Promise<RunResult> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped", stdin: "null" }).output();
  const r = {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
  if (check && r.code !== 0) throw new Error(`${cmd} ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return r;
}

export class PodNetwork {
  readonly pods = new Map<string, Pod>();
  readonly hub: string;
  #namespaces: string[] = [];
  #children: Deno.ChildProcess[] = [];
  readonly tag: string;

  private constructor(tag: string) {
    this.tag = tag;
    this.hub = `weft-${tag}-hub`;
  }

  /** Creates the hub with its bridge and one namespace per pod name, addressed 10.231.0.<10+i>/24. */
  static async create(podNames: string[]): Promise<PodNetwork> {
    const net = new PodNetwork(`${Deno.pid % 100000}${Math.floor(Math.random() * 1000)}`);
    try {
      await net.#addNs(net.hub);
      await sh("ip", ["-n", net.hub, "link", "add", "br0", "type", "bridge"]);
      await sh("ip", ["-n", net.hub, "link", "set", "br0", "up"]);
      for (const [i, name] of podNames.entries()) {
        const ns = `weft-${net.tag}-${name}`;
        const ip = `10.231.0.${10 + i}`;
        await net.#addNs(ns);
        await sh("ip", [
          "-n",
          ns,
          "link",
          "add",
          "eth0",
          "type",
          "veth",
          "peer",
          "name",
          `v${i}`,
          "netns",
          net.hub,
        ]);
        await sh("ip", ["-n", net.hub, "link", "set", `v${i}`, "master", "br0"]);
        await sh("ip", ["-n", net.hub, "link", "set", `v${i}`, "up"]);
        await sh("ip", ["-n", ns, "addr", "add", `${ip}/24`, "dev", "eth0"]);
        await sh("ip", ["-n", ns, "link", "set", "eth0", "up"]);
        net.pods.set(name, { name, ns, ip });
      }
    } catch (e) {
      await net.cleanup();
      throw e;
    }
    return net;
  }

  async #addNs(ns: string): Promise<void> {
    await sh("ip", ["netns", "add", ns]);
    this.#namespaces.push(ns);
    await sh("ip", ["-n", ns, "link", "set", "lo", "up"]);
  }

  pod(name: string): Pod {
    const p = this.pods.get(name);
    if (!p) throw new Error(`no pod ${name}`);
    return p;
  }

  /** Runs to completion inside a pod's namespace. */
  run(pod: string, argv: string[], check = false): Promise<RunResult> {
    return sh("ip", ["netns", "exec", this.pod(pod).ns, ...argv], check);
  }

  /** Starts a long-running process in a pod's namespace; its stdout/stderr go to `logFile`. */
  spawn(pod: string, argv: string[], env: Record<string, string>, logFile: string): Deno.ChildProcess {
    const child = new Deno.Command("ip", {
      args: ["netns", "exec", this.pod(pod).ns, ...argv],
      env,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    pipeToFile(child.stdout, logFile + ".out");
    pipeToFile(child.stderr, logFile);
    this.#children.push(child);
    return child;
  }

  async cleanup(): Promise<void> {
    for (const c of this.#children) {
      try {
        c.kill("SIGKILL");
      } catch {
        // already exited
      }
      await c.status.catch(() => {});
    }
    this.#children = [];
    for (const ns of this.#namespaces.reverse()) await sh("ip", ["netns", "del", ns], false);
    this.#namespaces = [];
  }
}

function pipeToFile(stream: ReadableStream<Uint8Array>, path: string): void {
  (async () => {
    const f = await Deno.open(path, { write: true, create: true, append: true });
    try {
      for await (const chunk of stream) await f.write(chunk);
    } catch {
      // process killed
    } finally {
      f.close();
    }
  })();
}

/**
 * A Deno installation the proxy's UID can use: hard links to this Deno binary and its npm cache
 * in a directory that UID owns (the originals sit under root's home, which other UIDs cannot
 * enter). Remove it with the returned `remove`.
 */
export async function denoForUid(
  uid: number,
): Promise<{ deno: string; denoDir: string; remove: () => Promise<void> }> {
  const info = await sh(Deno.execPath(), ["info", "--json"]);
  const denoDir = JSON.parse(info.stdout).denoDir as string;
  const dir = await Deno.makeTempDir({ prefix: "weft-uid-deno-" });
  try {
    await sh("cp", ["-al", `${denoDir}/npm`, `${dir}/npm`]);
    const linked = await sh("cp", ["-l", Deno.execPath(), `${dir}/deno`], false);
    if (linked.code !== 0) await sh("cp", [Deno.execPath(), `${dir}/deno`]);
    await Deno.chown(dir, uid, uid);
    await Deno.chmod(dir, 0o755);
  } catch (e) {
    await Deno.remove(dir, { recursive: true });
    throw e;
  }
  return { deno: `${dir}/deno`, denoDir: dir, remove: () => Deno.remove(dir, { recursive: true }) };
}
