/** HTTP/1.1 for the proxy: a server loop, a client connection and a per-endpoint pool. */
export { errorResponse, serveHttp1, type ServeHttp1Options } from "./server.ts";
export { type Http1ClientOptions, Http1Connection } from "./client.ts";
export { Http1Pool, type Http1PoolOptions } from "./pool.ts";
export { H1ParseError, Http1ClientError } from "./errors.ts";
export { DEFAULT_LIMITS, type H1Limits } from "./head.ts";
