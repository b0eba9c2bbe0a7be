/** Label sets of the proxy's HTTP metrics (Linkerd's names), and the key a label set is stored under. */

/** A policy resource reference as it appears in labels (`srv_*`, `route_*`, `authz_*`). */
export interface PolicyRef {
  readonly group: string;
  readonly kind: string;
  readonly name: string;
}

/**
 * TLS labels of the connection, as the TCP metrics build them: `{tls: "true", client_id}` /
 * `{tls: "true", server_id}` or `{tls: "no_identity", no_tls_reason}`. Order is kept.
 */
export type TlsLabels = Readonly<Record<string, string>>;

export interface InboundLabels {
  /** Host / :authority of the request; omitted from the labels when empty. */
  authority?: string;
  /** The original destination, "ip:port" or "[v6]:port". */
  targetAddr: string;
  tls: TlsLabels;
  server: PolicyRef;
  route: PolicyRef;
  authz: PolicyRef;
}

export interface OutboundLabels {
  authority?: string;
  targetAddr: string;
  tls: TlsLabels;
  /**
   * The endpoint's metric labels from Destination (address-set labels merged with the address's
   * own), unprefixed: `{namespace, service, pod, serviceaccount, …}` → `dst_namespace`, ….
   */
  dst?: Readonly<Record<string, string>>;
}

export interface RouteLabels {
  direction: "inbound" | "outbound";
  /** The logical destination (profile name with port, e.g. "web.ns.svc.cluster.local:80"). */
  dst: string;
  /** The profile route's `metrics_labels` (e.g. `{route: "GET /books"}`), exported as `rt_<key>`. */
  labels?: Readonly<Record<string, string>>;
}

export type Labels = Record<string, string>;

export function targetLabels(out: Labels, targetAddr: string): void {
  const i = targetAddr.lastIndexOf(":");
  let ip = i < 0 ? targetAddr : targetAddr.slice(0, i);
  if (ip.startsWith("[") && ip.endsWith("]")) ip = ip.slice(1, -1);
  out.target_addr = targetAddr;
  out.target_ip = ip;
  out.target_port = i < 0 ? "" : targetAddr.slice(i + 1);
}

export function policyLabels(out: Labels, prefix: string, ref: PolicyRef): void {
  out[`${prefix}_group`] = ref.group;
  out[`${prefix}_kind`] = ref.kind;
  out[`${prefix}_name`] = ref.name;
}

export function copyInto(out: Labels, from: Readonly<Record<string, string>>): void {
  for (const k in from) out[k] = from[k];
}

export function sortedPrefixed(
  out: Labels,
  prefix: string,
  from: Readonly<Record<string, string>> | undefined,
): void {
  if (!from) return;
  for (const k of Object.keys(from).sort()) out[`${prefix}${k}`] = from[k];
}

export function keyOf(labels: Labels): string {
  let k = "";
  for (const n in labels) k += `${n}\u0000${labels[n]}\u0001`;
  return k;
}
