/**
 * `LeaseApi` over the API server: GET, POST and PUT of one `coordination.k8s.io/v1` Lease with the
 * kubeconfig's credentials. PUT carries the read resourceVersion, so a stale write gets 409.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import type { Registry } from "prom-client";
import { systemClock } from "../../proto/support/clock.ts";
import { apiMessage, kubeRequest } from "./raw_request.ts";
import { LeaderElector, type Lease, type LeaseApi, LeaseConflictError } from "./leader_election.ts";

/** An elector for a component's Lease over the API server, with the default timings. */
export function kubeLeaderElector(o: {
  kc: KubeConfig;
  namespace: string;
  lease: string;
  identity: string;
  registry?: Registry;
  log?: (line: string) => void;
}): LeaderElector {
  return new LeaderElector({
    api: new KubeLeaseApi(o.kc, o.namespace, o.lease),
    clock: systemClock,
    lease: o.lease,
    namespace: o.namespace,
    identity: o.identity,
    registry: o.registry,
    log: o.log,
  });
}

export class KubeLeaseApi implements LeaseApi {
  readonly #collection: string;
  readonly #path: string;

  constructor(
    private readonly kc: KubeConfig,
    namespace: string,
    name: string,
    private readonly fieldManager = "weft-leader-election",
  ) {
    this.#collection = `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`;
    this.#path = `${this.#collection}/${name}`;
  }

  async get(signal: AbortSignal): Promise<Lease | undefined> {
    const r = await this.#request("GET", this.#path, signal);
    if (r.status === 404) return undefined;
    return this.#parse(r, `GET ${this.#path}`);
  }

  async create(lease: Lease, signal: AbortSignal): Promise<Lease> {
    return this.#parse(
      await this.#request("POST", this.#collection, signal, lease),
      `POST ${this.#collection}`,
    );
  }

  async update(lease: Lease, signal: AbortSignal): Promise<Lease> {
    return this.#parse(await this.#request("PUT", this.#path, signal, lease), `PUT ${this.#path}`);
  }

  #parse(r: { status: number; text: string }, what: string): Lease {
    if (r.status === 409) throw new LeaseConflictError(`${what}: ${apiMessage(r.text)}`);
    if (r.status < 200 || r.status >= 300) {
      throw new Error(`${what}: HTTP ${r.status}: ${apiMessage(r.text)}`);
    }
    return JSON.parse(r.text) as Lease;
  }

  #request(method: string, path: string, signal: AbortSignal, body?: Lease) {
    return kubeRequest(this.kc, {
      method,
      path,
      signal,
      fieldManager: this.fieldManager,
      ...(body !== undefined ? { body: JSON.stringify(body), contentType: "application/json" } : {}),
    });
  }
}
