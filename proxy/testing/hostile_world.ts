/**
 * A small world of "pods" for the hostile data-path tests: meshed pods (init's rules, a relay to
 * the in-process control plane, the real proxy as UID 2102 with its admin server on 0.0.0.0:4191
 * as the injector configures it, and an app) and unmeshed pods (an app or nothing). Every proxy
 * holds a certificate for `<pod>.default.serviceaccount.identity.linkerd.cluster.local` from one
 * test CA; `close()` removes everything and prints the processes' logs when the test failed.
 * The namespaces, CA, control plane and clean-up are a MeshFixture's (mesh_fixture.ts).
 */
import { ProxyEnv } from "../../proto/env.ts";
import type { DestinationProfile } from "../../proto/gen_messages/destination.ts";
import { Ports } from "../../proto/ports.ts";
import type { TestControlPlane } from "./control_plane.ts";
import { MeshFixture } from "./mesh_fixture.ts";
import { APP_TS, identityOf } from "./mesh_pods.ts";

export interface MeshedPodSpec {
  name: string;
  /** One process per entry, running proxy/testing/app.ts with these arguments, e.g. `["echo", "8080"]`. */
  apps: string[][];
  /** Extra proxy environment (e.g. the shutdown endpoint). */
  env?: Record<string, string>;
  /**
   * Server-speaks-first ports (the echo app greets first): opaque for the pod's own proxy and, through
   * the profile's `opaque_protocol`, for clients' proxies, as Linkerd's opaque-ports annotation does.
   */
  opaquePorts?: number[];
}

export interface WorldSpec {
  meshed: MeshedPodSpec[];
  unmeshed: { name: string; apps: string[][] }[];
  /** Fills the control plane's tables once the pods' addresses are known. */
  tables?: (cp: TestControlPlane, world: HostileWorld) => void;
}

export type ClientResult = { ok: boolean; data: string; error?: string };
export type FetchResult = { status: number; body: string };

/** A profile with `opaque_protocol` (Linkerd's opaque-ports annotation, as clients see it). */
export function opaqueProfile(): DestinationProfile {
  return {
    routes: [],
    retryBudget: undefined,
    dstOverrides: [],
    opaqueProtocol: true,
    fullyQualifiedName: "",
    endpoint: undefined,
    parentRef: undefined,
    profileRef: undefined,
  };
}

export { identityOf };

export class HostileWorld {
  readonly proxies = new Map<string, Deno.ChildProcess>();
  readonly creds = new Map<string, string>();
  readonly caFile: string;
  readonly work: string;

  private constructor(readonly mesh: MeshFixture) {
    this.caFile = mesh.caFile;
    this.work = mesh.work;
    for (const [pod, file] of Object.entries(mesh.creds)) this.creds.set(pod, file);
  }

  static async start(spec: WorldSpec): Promise<HostileWorld> {
    const names = [...spec.meshed.map((p) => p.name), ...spec.unmeshed.map((p) => p.name)];
    const mesh = await MeshFixture.create({
      prefix: "weft-hostile-",
      caName: "weft-hostile-mesh",
      pods: names,
    });
    const w = new HostileWorld(mesh);
    try {
      await w.#start(spec);
    } catch (e) {
      await w.close(true);
      throw e;
    }
    return w;
  }

  async #start(spec: WorldSpec): Promise<void> {
    const m = this.mesh;
    for (const p of spec.meshed) {
      for (const port of p.opaquePorts ?? []) {
        m.cp.tables.profiles.set(`${this.ip(p.name)}:${port}`, opaqueProfile());
      }
    }
    spec.tables?.(m.cp, this);
    await m.cp.start();
    for (const p of [...spec.meshed, ...spec.unmeshed]) {
      for (const [i, args] of p.apps.entries()) {
        await m.startApp(p.name, `app-${p.name}-${i}`, [APP_TS, ...args]);
      }
    }
    for (const p of spec.meshed) {
      await m.meshPod(p.name);
      const ports = p.apps.flatMap((a) => a.slice(1)).map((a) => a.slice(a.lastIndexOf(":") + 1)).join(",");
      this.proxies.set(
        p.name,
        m.startProxy(p.name, {
          inboundPorts: ports,
          env: {
            // As the injector sets it: probes and Prometheus reach the admin port from outside.
            [ProxyEnv.adminListenAddr]: `0.0.0.0:${Ports.proxyAdmin}`,
            [ProxyEnv.inboundIps]: this.ip(p.name),
            ...(p.opaquePorts
              ? { [ProxyEnv.inboundPortsDisableProtocolDetection]: p.opaquePorts.join(",") }
              : {}),
            ...p.env,
          },
        }),
      );
    }
    for (const p of spec.meshed) await m.ready(p.name);
  }

  ip(pod: string): string {
    return this.mesh.pod(pod).ip;
  }

  /** Runs a command as root inside a pod (e.g. `ip route`). */
  async sh(pod: string, ...argv: string[]): Promise<void> {
    const r = await this.mesh.net.run(pod, argv);
    if (r.code !== 0) throw new Error(`${argv.join(" ")} in ${pod} exited ${r.code}: ${r.stderr}`);
  }

  /** Runs one app.ts command inside a pod and returns the JSON it printed last. */
  async app<T = ClientResult>(pod: string, ...args: string[]): Promise<T> {
    return await this.mesh.json<T>(pod, `app ${args.join(" ")} in ${pod}`, APP_TS, ...args);
  }

  fetch(pod: string, url: string, method = "GET"): Promise<FetchResult> {
    return this.app<FetchResult>(pod, "fetch", url, method);
  }

  /** The proxy's metrics, scraped from inside its pod. */
  async metrics(pod: string): Promise<string> {
    return (await this.fetch(pod, `http://127.0.0.1:${Ports.proxyAdmin}/metrics`)).body;
  }

  async close(failed: boolean): Promise<void> {
    if (failed) this.mesh.failed = true;
    await this.mesh.close();
  }
}
