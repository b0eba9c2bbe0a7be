/** Mapping of HTTP method names to the `io.linkerd.proxy.http_types.HttpMethod` wire form. */
import { type HttpMethod, HttpMethod_Registered } from "./gen_messages/http_types.ts";

const REGISTERED: Record<string, HttpMethod_Registered> = {
  GET: HttpMethod_Registered.GET,
  POST: HttpMethod_Registered.POST,
  PUT: HttpMethod_Registered.PUT,
  DELETE: HttpMethod_Registered.DELETE,
  PATCH: HttpMethod_Registered.PATCH,
  OPTIONS: HttpMethod_Registered.OPTIONS,
  CONNECT: HttpMethod_Registered.CONNECT,
  HEAD: HttpMethod_Registered.HEAD,
  TRACE: HttpMethod_Registered.TRACE,
};

/**
 * A registered method when `name` is one (compared upper-cased when `ignoreCase`, as
 * ServiceProfiles are read), otherwise the name itself as an unregistered method.
 */
export function toHttpMethod(name: string, ignoreCase = false): HttpMethod {
  const r = REGISTERED[ignoreCase ? name.toUpperCase() : name];
  return r !== undefined
    ? { type: { $case: "registered", value: r } }
    : { type: { $case: "unregistered", value: name } };
}
