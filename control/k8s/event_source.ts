/**
 * Where an informer's objects come from: the Kubernetes API (`KubeApiSource`) or, in component
 * tests, `FakeEventSource`. Both report the same errors, so the informer's recovery logic is
 * exercised by the fake exactly as it runs against a real API server.
 */
import type { ListPage, WatchEvent } from "./types.ts";

export interface ListOptions {
  /** Page size; the source may return fewer. */
  limit?: number;
  /** Continue token from the previous page. */
  continue?: string;
  signal: AbortSignal;
}

export interface WatchOptions {
  /** Resume point: only changes after this version are delivered. */
  resourceVersion: string;
  /** The server ends the watch after this long; the informer then resumes from its last version. */
  timeoutSeconds: number;
  signal: AbortSignal;
}

export interface EventSource<T> {
  /** Names the resource in logs and errors, e.g. `v1/pods`. */
  readonly description: string;
  list(opts: ListOptions): Promise<ListPage<T>>;
  /**
   * Streams changes after `resourceVersion`, calling `onEvent` synchronously for each (including
   * BOOKMARK). Resolves when the server ends the stream or `signal` aborts; rejects with
   * `GoneError` when the version is too old (HTTP 410 or a watch ERROR event with code 410) and
   * with another error when the stream fails.
   */
  watch(opts: WatchOptions, onEvent: (event: WatchEvent<T>) => void): Promise<void>;
}

/** The requested resourceVersion is no longer available: the informer must list again. */
export class GoneError extends Error {
  override name = "GoneError";
}

/** A non-success response from the API server. */
export class ApiError extends Error {
  override name = "ApiError";
  constructor(readonly statusCode: number, message: string) {
    super(message);
  }
}
