/** `io.linkerd.proxy.http_types.HttpMethod` → the method name a request carries. */
import type { HttpMethod } from "../../proto/gen_messages/http_types.ts";
import { RouteConfigError } from "./meta.ts";

const NAMES = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "HEAD", "TRACE"];

export function httpMethodName(m: HttpMethod, what: string): string {
  const t = m.type;
  if (t?.$case === "registered") {
    const n = NAMES[t.value];
    if (n === undefined) throw new RouteConfigError(`${what}: unknown registered method ${t.value}`);
    return n;
  }
  if (t?.$case === "unregistered" && t.value) return t.value;
  throw new RouteConfigError(`${what}: method match without a method`);
}
