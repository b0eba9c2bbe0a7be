/**
 * The tap API's contract for the proxy (which serves it on its control port) and for tests and
 * clients that speak it without grpc-js stubs: the messages of `tap.proto` (io.linkerd.proxy.tap,
 * linkerd2-proxy-api v0.20) and the one method's path.
 */
export {
  Eos,
  ObserveRequest,
  type ObserveRequest_Extract,
  type ObserveRequest_Match,
  type ObserveRequest_Match_Http,
  type ObserveRequest_Match_Http_StringMatch,
  type ObserveRequest_Match_Label,
  type ObserveRequest_Match_Seq,
  type ObserveRequest_Match_Tcp,
  type ObserveRequest_Match_Tcp_Netmask,
  TapEvent,
  type TapEvent_EndpointMeta,
  type TapEvent_Http,
  type TapEvent_Http_ResponseEnd,
  type TapEvent_Http_StreamId,
  TapEvent_ProxyDirection,
} from "./gen_messages/tap.ts";
export {
  type Headers as HttpHeaders,
  type HttpMethod,
  HttpMethod_Registered,
  type Scheme,
  Scheme_Registered,
} from "./gen_messages/http_types.ts";
export type { IPAddress, TcpAddress } from "./gen_messages/net.ts";

/** gRPC path of `Tap.Observe` (server streaming). */
export const TAP_OBSERVE_PATH = "/io.linkerd.proxy.tap.Tap/Observe";
