/**
 * Parses the `path` of a Destination request: `<svc>.<ns>.svc.<cluster-domain>[:port]`,
 * `<hostname>.<svc>.<ns>.svc.<cluster-domain>[:port]` or `<ip>:<port>`; a missing port is 80.
 */
import { RequestError } from "../grpc/request_error.ts";

export type Target =
  | { kind: "service"; service: string; namespace: string; port: number; hostname?: string }
  | { kind: "ip"; ip: string; port: number };

const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;

function parsePort(text: string, path: string): number {
  if (!/^\d{1,5}$/.test(text) || Number(text) < 1 || Number(text) > 65535) {
    throw new RequestError("invalid_argument", `Invalid port in "${path}": want 1-65535, got "${text}"`);
  }
  return Number(text);
}

export function parseTarget(path: string, clusterDomain: string): Target {
  if (path === "") throw new RequestError("invalid_argument", "Empty destination path");
  let host = path;
  let port = 80;
  if (path.startsWith("[")) {
    const end = path.indexOf("]");
    if (end < 0) throw new RequestError("invalid_argument", `Invalid IPv6 address in "${path}"`);
    host = path.slice(1, end);
    const rest = path.slice(end + 1);
    if (rest !== "") {
      if (!rest.startsWith(":")) throw new RequestError("invalid_argument", `Invalid path "${path}"`);
      port = parsePort(rest.slice(1), path);
    }
    return { kind: "ip", ip: host, port };
  }
  const colon = path.lastIndexOf(":");
  if (colon >= 0) {
    if (path.indexOf(":") !== colon) return { kind: "ip", ip: path, port }; // bare IPv6
    host = path.slice(0, colon);
    port = parsePort(path.slice(colon + 1), path);
  }
  if (IPV4.test(host)) return { kind: "ip", ip: host, port };
  if (host.endsWith(".")) host = host.slice(0, -1);
  const labels = host.toLowerCase().split(".");
  const suffix = ["svc", ...clusterDomain.split(".")];
  const head = labels.length - suffix.length;
  const fits = head >= 2 && head <= 3 && suffix.every((s, i) => labels[head + i] === s);
  if (!fits) {
    throw new RequestError(
      "invalid_argument",
      `Invalid authority "${path}": want <service>.<namespace>.svc.${clusterDomain} or ` +
        `<hostname>.<service>.<namespace>.svc.${clusterDomain}`,
    );
  }
  if (head === 2) return { kind: "service", service: labels[0], namespace: labels[1], port };
  return { kind: "service", hostname: labels[0], service: labels[1], namespace: labels[2], port };
}

export function serviceFqn(service: string, namespace: string, clusterDomain: string): string {
  return `${service}.${namespace}.svc.${clusterDomain}`;
}

/** The client's context token: JSON `{"ns","nodeName","pod"}` or the legacy `ns:<ns>`. */
export interface ClientContext {
  ns?: string;
  nodeName?: string;
  pod?: string;
}

export function parseContextToken(token: string): ClientContext {
  if (token === "") return {};
  if (token.startsWith("ns:")) return { ns: token.slice(3) };
  try {
    const v = JSON.parse(token) as Record<string, unknown>;
    const str = (x: unknown) => typeof x === "string" && x !== "" ? x : undefined;
    return { ns: str(v.ns), nodeName: str(v.nodeName), pod: str(v.pod) };
  } catch {
    // A bad token only loses topology filtering and the client-namespace profile.
    return {};
  }
}
