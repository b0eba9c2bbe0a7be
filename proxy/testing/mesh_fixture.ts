/**
 * The life of a network-namespace mesh test: a work directory the proxies' UID can read, a test CA
 * with a certificate for every pod (`<pod>.default.serviceaccount.identity.linkerd.cluster.local`,
 * or for the service accounts the spec names), the in-process control plane on unix sockets, the
 * pods' namespaces and a deno the proxy UID can run. `MeshFixture.run` tears all of it down afterwards and prints the processes' logs when a
 * step failed or the body threw. Each test still decides what its pods run (see mesh_pods.ts).
 */
import { DEFAULT_PROXY_UID } from "../../proto/ports.ts";
import { createTestCa, type TestCa } from "./certs.ts";
import { TestControlPlane } from "./control_plane.ts";
import {
  adminGet,
  applyInit,
  denoRun,
  identityOf,
  startProxy,
  startRelay,
  waitForLine,
} from "./mesh_pods.ts";
import { denoForUid, type Pod, PodNetwork } from "./netns.ts";
import { until } from "./poll.ts";

export interface MeshFixtureSpec {
  /** Prefix of the temporary work directory. */
  prefix: string;
  /** Name of the test CA. */
  caName: string;
  /** Namespaces to create. */
  pods: string[];
  /** Service accounts to certify (files in `creds`); default: one per pod, named after it. */
  certificates?: string[];
  /** Print only the last this many characters of each log on failure (default: all). */
  logTail?: number;
}

/** `{"ns":"default","pod":"<pod>"}`, the workload a pod's proxy asks policy for. */
export const workloadOf = (pod: string) => `{"ns":"default","pod":"${pod}"}`;

/** Prints every `*.log*` file in `dir`, or copies them into $WEFT_DATAPATH_LOGS when it is set. */
export async function dumpLogs(dir: string, tail?: number): Promise<void> {
  const keep = Deno.env.get("WEFT_DATAPATH_LOGS");
  for await (const f of Deno.readDir(dir)) {
    if (!f.name.includes(".log")) continue;
    const text = await Deno.readTextFile(`${dir}/${f.name}`);
    if (keep) await Deno.writeTextFile(`${keep}/${f.name}`, text);
    else console.error(`--- ${f.name}\n${tail === undefined ? text : text.slice(-tail)}`);
  }
}

/** The JSON a pod's command printed on its last line of stdout. */
export function lastJson<T>(r: { stdout: string; stderr: string }, what: string): T {
  try {
    return JSON.parse(r.stdout.trim().split("\n").pop()!);
  } catch {
    throw new Error(`${what} printed ${r.stdout} ${r.stderr}`);
  }
}

export class MeshFixture {
  readonly cp: TestControlPlane;
  /** Each pod's credentials file (certificate, chain and key as JSON), readable by the proxy UID. */
  readonly creds: Record<string, string> = {};
  /** The CA certificate as a PEM file. */
  readonly caFile: string;
  /** Set by a failed `step` (or a throw); logs are printed at the end when set. */
  failed = false;
  #net: PodNetwork | undefined;
  #uidDeno: Awaited<ReturnType<typeof denoForUid>> | undefined;

  private constructor(readonly work: string, readonly ca: TestCa, readonly spec: MeshFixtureSpec) {
    this.cp = new TestControlPlane(`${work}/dst.sock`, `${work}/policy.sock`);
    this.caFile = `${work}/ca.pem`;
  }

  /** Builds the fixture, runs `body`, and removes everything whatever happened. */
  static async run(spec: MeshFixtureSpec, body: (m: MeshFixture) => Promise<void>): Promise<void> {
    const m = await MeshFixture.create(spec);
    try {
      await body(m);
    } catch (e) {
      m.failed = true;
      throw e;
    } finally {
      await m.close();
    }
  }

  /** Builds the fixture; the caller must `close()` it (which a failed build has already done). */
  static async create(spec: MeshFixtureSpec): Promise<MeshFixture> {
    const ca = await createTestCa(spec.caName);
    const work = await Deno.makeTempDir({ prefix: spec.prefix });
    await Deno.chmod(work, 0o755);
    const m = new MeshFixture(work, ca, spec);
    try {
      await m.#create();
    } catch (e) {
      m.failed = true;
      await m.close();
      throw e;
    }
    return m;
  }

  /** Stops the control plane, removes the namespaces and the work directory; prints logs if `failed`. */
  async close(): Promise<void> {
    if (this.failed) await dumpLogs(this.work, this.spec.logTail);
    this.cp.stop();
    await this.#net?.cleanup();
    await this.#uidDeno?.remove();
    await Deno.remove(this.work, { recursive: true });
  }

  async #create(): Promise<void> {
    await Deno.writeTextFile(this.caFile, this.ca.certPem);
    await Deno.chmod(this.caFile, 0o644);
    for (const sa of this.spec.certificates ?? this.spec.pods) {
      const p = `${this.work}/${sa}.json`;
      await Deno.writeTextFile(p, JSON.stringify(await this.ca.issue(identityOf(sa))));
      await Deno.chmod(p, 0o644);
      this.creds[sa] = p;
    }
    this.#net = await PodNetwork.create(this.spec.pods);
    this.#uidDeno = await denoForUid(DEFAULT_PROXY_UID);
  }

  get net(): PodNetwork {
    return this.#net!;
  }

  pod(name: string): Pod {
    return this.net.pod(name);
  }

  /** Runs a test step; a failure marks the fixture failed. Returns whether the step passed. */
  async step(t: Deno.TestContext, name: string, fn: () => Promise<void>): Promise<boolean> {
    const ok = await t.step(name, fn);
    if (!ok) this.failed = true;
    return ok;
  }

  /** Starts `deno run -A --cached-only ...args` in a pod, logging to `<work>/<log>.log`. */
  spawn(pod: string, log: string, args: string[]): Deno.ChildProcess {
    return this.net.spawn(
      pod,
      [Deno.execPath(), "run", "-A", "--cached-only", ...args],
      {},
      `${this.work}/${log}.log`,
    );
  }

  /** `spawn`, then waits for the app to print "listening". */
  async startApp(pod: string, log: string, args: string[]): Promise<Deno.ChildProcess> {
    const child = this.spawn(pod, log, args);
    await waitForLine(`${this.work}/${log}.log.out`, "listening");
    return child;
  }

  /** Runs a deno script in a pod to its end and returns the JSON it printed last. */
  async json<T>(pod: string, what: string, ...args: string[]): Promise<T> {
    return lastJson<T>(await denoRun(this.net, pod, ...args), what);
  }

  /** init's iptables rules and a relay to the control plane: what a meshed pod has before its proxy. */
  async meshPod(pod: string): Promise<void> {
    await applyInit(this.net, pod);
    await this.relay(pod);
  }

  /** Exposes the control plane on the pod's 127.0.0.1:8086 and :8090, logging to relay-<pod>.log. */
  async relay(pod: string): Promise<void> {
    await startRelay(
      this.net,
      pod,
      { dst: this.cp.dstSocket, policy: this.cp.policySocket },
      `${this.work}/relay-${pod}.log`,
    );
  }

  /**
   * The real proxy of `pod` as UID 2102, logging to proxy-<pod>.log, with the certificate of
   * service account `as` (default: the pod's own).
   */
  startProxy(
    pod: string,
    o: { inboundPorts: string; env?: Record<string, string>; as?: string },
  ): Deno.ChildProcess {
    const sa = o.as ?? pod;
    return startProxy(this.net, {
      pod,
      localName: identityOf(sa),
      workload: workloadOf(pod),
      credentialsFile: this.creds[sa],
      trustAnchorsPem: this.ca.certPem,
      workDir: this.work,
      uidDeno: this.#uidDeno!,
      inboundPorts: o.inboundPorts,
      env: o.env,
      logFile: `${this.work}/proxy-${pod}.log`,
    });
  }

  /** Waits until the pod's proxy answers /ready with 200. */
  async ready(pod: string): Promise<void> {
    await until(`${pod} ready`, async () => (await this.admin(pod, "/ready")).status === 200 || undefined);
  }

  /** GETs a path of the pod's proxy admin server from inside the pod. */
  admin(pod: string, path: string): Promise<{ status: number; body: string }> {
    return adminGet(this.net, pod, path);
  }
}
