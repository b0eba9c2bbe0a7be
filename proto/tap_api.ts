/**
 * The tap API (`io.linkerd.proxy.tap.Tap/Observe`) as the control plane speaks it: the grpc-js client
 * and the message types, re-exported from the generated code so callers never import proto/gen/.
 * The proxy serves it on its control port; the tap component is the client.
 */
export {
  type Eos,
  type ObserveRequest,
  type ObserveRequest_Match as TapMatch,
  TapClient,
  type TapEvent,
  type TapEvent_Http as TapHttpEvent,
  TapEvent_ProxyDirection as TapDirection,
} from "./gen/tap.ts";
export type { Headers as HttpHeaders } from "./gen/http_types.ts";
export { HttpMethod_Registered, Scheme_Registered } from "./gen/http_types.ts";
export type { TcpAddress } from "./gen/net.ts";

/** ServiceAccount of the tap component: proxies serve tap only to its identity (`weft-tap.<cp ns>.serviceaccount…`). */
export const TAP_SERVICE_ACCOUNT = "weft-tap";
