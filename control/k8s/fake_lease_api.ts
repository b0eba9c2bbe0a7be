/**
 * An in-memory `LeaseApi` for tests: one Lease shared by any number of electors, with the API
 * server's optimistic concurrency (a write with a stale resourceVersion gets 409), and switches to
 * make calls fail or hang.
 */
import { type Lease, type LeaseApi, LeaseConflictError } from "./leader_election.ts";

/** One client's connection to the store, with its own failure switches. */
export interface FakeLeaseClient extends LeaseApi {
  /** Calls answer with this error while set. */
  failWith: Error | undefined;
  /** Calls never answer while set (until their signal aborts, unless `ignoreAbort`). */
  hang: boolean;
  ignoreAbort: boolean;
}

export class FakeLeaseStore {
  lease: Lease | undefined;
  #version = 0;
  calls = 0;

  /** A client of the store, as one elector's API connection. */
  api(): FakeLeaseClient {
    const c: FakeLeaseClient = {
      failWith: undefined,
      hang: false,
      ignoreAbort: false,
      get: (signal) => this.#call(c, signal, () => this.lease && structuredClone(this.lease)),
      create: (lease, signal) =>
        this.#call(c, signal, () => {
          if (this.lease) throw new LeaseConflictError("already exists");
          return this.#store(lease);
        }),
      update: (lease, signal) =>
        this.#call(c, signal, () => {
          if (!this.lease) throw new Error("not found");
          if (lease.metadata.resourceVersion !== this.lease.metadata.resourceVersion) {
            throw new LeaseConflictError("the object has been modified");
          }
          return this.#store(lease);
        }),
    };
    return c;
  }

  /** Writes the Lease as another party would (bumps the resourceVersion). */
  set(lease: Lease): Lease {
    return this.#store(lease);
  }

  #store(lease: Lease): Lease {
    this.lease = structuredClone({
      ...lease,
      metadata: { ...lease.metadata, resourceVersion: String(++this.#version) },
    });
    return structuredClone(this.lease);
  }

  #call<T>(c: FakeLeaseClient, signal: AbortSignal, f: () => T): Promise<T> {
    this.calls++;
    if (c.failWith) return Promise.reject(c.failWith);
    if (c.hang) {
      return new Promise((_, reject) => {
        if (!c.ignoreAbort) signal.addEventListener("abort", () => reject(new Error("aborted")));
      });
    }
    return new Promise((resolve, reject) => {
      queueMicrotask(() => {
        try {
          resolve(f());
        } catch (e) {
          reject(e);
        }
      });
    });
  }
}
