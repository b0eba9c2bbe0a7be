import assert from "node:assert/strict";
import { HeaderList } from "../http/message.ts";
import {
  grpcStatusOf,
  h2ErrorLabel,
  ResponseClassification,
  type ResponseClassifier,
  streamErrorLabel,
} from "./response_class.ts";
import { HttpError } from "../http/message.ts";

interface Row {
  name: string;
  grpc?: boolean;
  profile?: ResponseClassifier;
  status?: number;
  headers?: string[];
  trailers?: string[];
  error?: string;
  want: [classification: "success" | "failure", grpcStatus: number, error: string];
}

const failOn5xxAndTeapot: ResponseClassifier = (status) =>
  status === 418 ? true : status >= 500 ? true : status === 200 ? false : undefined;

const rows: Row[] = [
  { name: "HTTP 200", status: 200, want: ["success", -1, ""] },
  { name: "HTTP 404 is the application answering", status: 404, want: ["success", -1, ""] },
  { name: "HTTP 499", status: 499, want: ["success", -1, ""] },
  { name: "HTTP 500", status: 500, want: ["failure", -1, ""] },
  { name: "HTTP 503", status: 503, want: ["failure", -1, ""] },
  { name: "HTTP 599", status: 599, want: ["failure", -1, ""] },
  {
    name: "HTTP 200 with grpc-status 14 trailer",
    status: 200,
    trailers: ["grpc-status", "14"],
    want: ["failure", 14, ""],
  },
  {
    name: "HTTP 500 wins over a grpc-status 0 trailer",
    status: 500,
    trailers: ["grpc-status", "0"],
    want: ["failure", -1, ""],
  },
  {
    name: "gRPC OK in trailers",
    grpc: true,
    status: 200,
    trailers: ["grpc-status", "0"],
    want: ["success", 0, ""],
  },
  {
    name: "gRPC NOT_FOUND (5) is success",
    grpc: true,
    status: 200,
    trailers: ["grpc-status", "5"],
    want: ["success", 5, ""],
  },
  {
    name: "gRPC INVALID_ARGUMENT (3) is success",
    grpc: true,
    status: 200,
    trailers: ["grpc-status", "3"],
    want: ["success", 3, ""],
  },
  {
    name: "gRPC PERMISSION_DENIED (7) is success",
    grpc: true,
    status: 200,
    trailers: ["grpc-status", "7"],
    want: ["success", 7, ""],
  },
  {
    name: "gRPC UNKNOWN (2)",
    grpc: true,
    status: 200,
    trailers: ["grpc-status", "2"],
    want: ["failure", 2, ""],
  },
  {
    name: "gRPC DEADLINE_EXCEEDED (4)",
    grpc: true,
    status: 200,
    trailers: ["grpc-status", "4"],
    want: ["failure", 4, ""],
  },
  {
    name: "gRPC INTERNAL (13)",
    grpc: true,
    status: 200,
    trailers: ["grpc-status", "13"],
    want: ["failure", 13, ""],
  },
  {
    name: "gRPC UNAVAILABLE (14)",
    grpc: true,
    status: 200,
    trailers: ["grpc-status", "14"],
    want: ["failure", 14, ""],
  },
  {
    name: "gRPC DATA_LOSS (15)",
    grpc: true,
    status: 200,
    trailers: ["grpc-status", "15"],
    want: ["failure", 15, ""],
  },
  {
    name: "gRPC code above 16 is success",
    grpc: true,
    status: 200,
    trailers: ["grpc-status", "42"],
    want: ["success", 42, ""],
  },
  {
    name: "trailers-only gRPC error in headers",
    grpc: true,
    status: 200,
    headers: ["grpc-status", "14"],
    trailers: ["grpc-status", "0"],
    want: ["failure", 14, ""],
  },
  { name: "gRPC without a grpc-status is success 0", grpc: true, status: 200, want: ["success", 0, ""] },
  { name: "gRPC answered with HTTP 503", grpc: true, status: 503, want: ["failure", -1, ""] },
  {
    name: "non-numeric grpc-status is ignored",
    grpc: true,
    status: 200,
    trailers: ["grpc-status", "x1"],
    want: ["success", 0, ""],
  },
  {
    name: "stream error after the head",
    status: 200,
    error: "h2(CANCEL)",
    want: ["failure", -1, "h2(CANCEL)"],
  },
  {
    name: "stream error overrides a trailers-only OK",
    grpc: true,
    status: 200,
    headers: ["grpc-status", "0"],
    error: "timeout",
    want: ["failure", -1, "timeout"],
  },
  { name: "error before any response", error: "timeout", want: ["failure", -1, "timeout"] },
  { name: "empty error label becomes unclassified", error: "", want: ["failure", -1, "unclassified"] },
  {
    name: "profile class marks 418 failure",
    profile: failOn5xxAndTeapot,
    status: 418,
    want: ["failure", -1, ""],
  },
  {
    name: "profile class marks 200 success despite a gRPC error trailer",
    profile: failOn5xxAndTeapot,
    grpc: true,
    status: 200,
    trailers: ["grpc-status", "14"],
    want: ["success", -1, ""],
  },
  {
    name: "no profile class matches: default rules (gRPC trailer)",
    profile: failOn5xxAndTeapot,
    grpc: true,
    status: 204,
    trailers: ["grpc-status", "13"],
    want: ["failure", 13, ""],
  },
  {
    name: "no profile class matches: default rules (HTTP)",
    profile: () => undefined,
    status: 502,
    want: ["failure", -1, ""],
  },
];

for (const r of rows) {
  Deno.test(`classification: ${r.name}`, () => {
    const c = new ResponseClassification(r.grpc ?? false, r.profile);
    if (r.status !== undefined) c.head(r.status, new HeaderList(r.headers ?? []));
    if (r.error !== undefined) c.streamError(r.error);
    else c.end(r.trailers ? new HeaderList(r.trailers) : undefined);
    assert.deepEqual([c.failure ? "failure" : "success", c.grpcStatus, c.error], r.want);
  });
}

Deno.test("grpcStatusOf parses decimal values only", () => {
  const of = (v: string) => grpcStatusOf(new HeaderList(["grpc-status", v]));
  assert.equal(of("0"), 0);
  assert.equal(of("16"), 16);
  assert.equal(of(""), -1);
  assert.equal(of(" 1"), -1);
  assert.equal(of("-1"), -1);
  assert.equal(of("99999999999"), -1);
  assert.equal(grpcStatusOf(new HeaderList()), -1);
  assert.equal(grpcStatusOf(undefined), -1);
});

Deno.test("stream error labels follow Linkerd's spelling", () => {
  assert.equal(h2ErrorLabel(8), "h2(CANCEL)");
  assert.equal(h2ErrorLabel(1), "h2(PROTOCOL_ERROR)");
  assert.equal(h2ErrorLabel(99), "h2(Reason(99))");
  assert.equal(streamErrorLabel(new HttpError(504, "response timeout", "timeout")), "timeout");
  assert.equal(streamErrorLabel(Object.assign(new Error("reset"), { h2Code: 7 })), "h2(REFUSED_STREAM)");
  assert.equal(streamErrorLabel(new Error("Stream closed with error code NGHTTP2_CANCEL")), "h2(CANCEL)");
  assert.equal(streamErrorLabel(new Error("ECONNRESET")), "unclassified");
  assert.equal(streamErrorLabel("nope"), "unclassified");
});
