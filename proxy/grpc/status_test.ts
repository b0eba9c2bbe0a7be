import assert from "node:assert/strict";
import { ErrorCode } from "../http/h2/frame.ts";
import { GrpcError, parseGrpcStatus, Status, statusFromHttp, statusFromReset, statusName } from "./status.ts";

Deno.test("grpc status: grpc-status and a percent-encoded grpc-message", () => {
  assert.deepEqual(parseGrpcStatus("0", undefined), { code: 0, details: "" });
  assert.deepEqual(parseGrpcStatus("5", "no%20such%20thing%3A%20%C3%BCn"), {
    code: 5,
    details: "no such thing: ün",
  });
  // A malformed escape is kept as sent.
  assert.deepEqual(parseGrpcStatus("13", "100%"), { code: 13, details: "100%" });
});

Deno.test("grpc status: missing, unreadable or unknown grpc-status is UNKNOWN, naming what came", () => {
  assert.equal(parseGrpcStatus(undefined, "x").code, Status.UNKNOWN);
  assert.match(parseGrpcStatus(undefined, "x").details, /without a grpc-status/);
  assert.deepEqual(parseGrpcStatus("abc", "x"), {
    code: Status.UNKNOWN,
    details: 'the server sent an unreadable grpc-status "abc"',
  });
  assert.match(parseGrpcStatus("-1", "").details, /unreadable grpc-status "-1"/);
  assert.deepEqual(parseGrpcStatus("99", ""), {
    code: Status.UNKNOWN,
    details: "the server sent grpc-status 99, which is not a gRPC status code",
  });
});

Deno.test("grpc status: HTTP statuses and stream resets map as gRPC specifies", () => {
  assert.equal(statusFromHttp(503), Status.UNAVAILABLE);
  assert.equal(statusFromHttp(404), Status.UNIMPLEMENTED);
  assert.equal(statusFromHttp(401), Status.UNAUTHENTICATED);
  assert.equal(statusFromHttp(500), Status.UNKNOWN);
  assert.equal(statusFromReset(ErrorCode.REFUSED_STREAM), Status.UNAVAILABLE);
  assert.equal(statusFromReset(ErrorCode.CANCEL), Status.CANCELLED);
  assert.equal(statusFromReset(ErrorCode.ENHANCE_YOUR_CALM), Status.RESOURCE_EXHAUSTED);
  assert.equal(statusFromReset(ErrorCode.PROTOCOL_ERROR), Status.INTERNAL);
});

Deno.test("grpc status: GrpcError names the code and keeps the details apart", () => {
  const e = new GrpcError(Status.UNAVAILABLE, "policy: connect failed");
  assert.equal(e.message, "UNAVAILABLE: policy: connect failed");
  assert.equal(e.details, "policy: connect failed");
  assert.equal(statusName(42), "code 42");
});
