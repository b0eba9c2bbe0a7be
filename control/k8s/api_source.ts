/**
 * `EventSource` backed by the Kubernetes API. Configuration and authentication (client
 * certificates, bearer and projected tokens, CA) come from `@kubernetes/client-node`'s
 * KubeConfig; the list and watch requests are made here because the library's Watch cannot ask
 * for metadata-only objects (`PartialObjectMetadata`), which keep the caches of objects the mesh
 * only needs the metadata of small.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import * as http from "node:http";
import * as https from "node:https";
import {
  ApiError,
  type EventSource,
  GoneError,
  type ListOptions,
  type WatchOptions,
} from "./event_source.ts";
import type { KubeObject, ListPage, WatchEvent } from "./types.ts";

export interface ResourceRef {
  /** API group, "" for the core group. */
  group: string;
  version: string;
  /** Plural resource name, e.g. `endpointslices`. */
  plural: string;
  /** Watch one namespace; all namespaces when unset. */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Ask for `PartialObjectMetadata` (metadata only) instead of full objects. */
  metadataOnly?: boolean;
}

export function resourcePath(ref: ResourceRef): string {
  const base = ref.group === "" ? `/api/${ref.version}` : `/apis/${ref.group}/${ref.version}`;
  return ref.namespace ? `${base}/namespaces/${ref.namespace}/${ref.plural}` : `${base}/${ref.plural}`;
}

const JSON_TYPE = "application/json";
const METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
const METADATA_ONE = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

interface StatusObject {
  kind?: string;
  code?: number;
  reason?: string;
  message?: string;
}

function statusError(code: number, body: string, what: string): Error {
  let message = body.slice(0, 500);
  try {
    const status = JSON.parse(body) as StatusObject;
    if (status.message) message = status.message;
  } catch {
    // Not a Status object: keep the raw text.
  }
  if (code === 410) return new GoneError(`${what}: ${message}`);
  return new ApiError(code, `${what}: HTTP ${code}: ${message}`);
}

export class KubeApiSource<T extends KubeObject> implements EventSource<T> {
  readonly description: string;
  readonly #path: string;

  constructor(readonly kubeConfig: KubeConfig, readonly ref: ResourceRef) {
    this.#path = resourcePath(ref);
    this.description = `${ref.group ? `${ref.group}/` : ""}${ref.version}/${ref.plural}` +
      (ref.metadataOnly ? " (metadata)" : "");
  }

  async #request(
    query: Record<string, string | undefined>,
    accept: string,
    signal: AbortSignal,
    idleTimeoutMs: number,
  ): Promise<http.IncomingMessage> {
    const cluster = this.kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error("kubeconfig has no current cluster");
    const url = new URL(cluster.server.replace(/\/$/, "") + this.#path);
    const params = { labelSelector: this.ref.labelSelector, fieldSelector: this.ref.fieldSelector, ...query };
    for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== "") url.searchParams.set(k, v);
    const opts: https.RequestOptions = { method: "GET", headers: { Accept: accept } };
    await this.kubeConfig.applyToHTTPSOptions(opts);
    const mod = url.protocol === "https:" ? https : http;
    return await new Promise((resolve, reject) => {
      const req = mod.request(url, { ...opts, signal }, (res) => resolve(res));
      // An idle timeout catches connections that die silently (no RST), which would otherwise
      // leave the informer waiting forever.
      req.setTimeout(
        idleTimeoutMs,
        () => req.destroy(new Error(`no data from the API server for ${idleTimeoutMs}ms`)),
      );
      req.on("error", reject);
      req.end();
    });
  }

  async #readAll(res: http.IncomingMessage): Promise<string> {
    res.setEncoding("utf8");
    let body = "";
    for await (const chunk of res) body += chunk;
    return body;
  }

  async list(opts: ListOptions): Promise<ListPage<T>> {
    const what = `list ${this.description}`;
    const res = await this.#request(
      { limit: opts.limit ? String(opts.limit) : undefined, continue: opts.continue },
      this.ref.metadataOnly ? `${METADATA_LIST},${JSON_TYPE}` : JSON_TYPE,
      opts.signal,
      60_000,
    );
    const body = await this.#readAll(res);
    if (res.statusCode !== 200) throw statusError(res.statusCode ?? 0, body, what);
    const list = JSON.parse(body) as {
      items?: T[];
      metadata?: { resourceVersion?: string; continue?: string };
    };
    return {
      items: list.items ?? [],
      resourceVersion: list.metadata?.resourceVersion ?? "",
      continue: list.metadata?.continue || undefined,
    };
  }

  async watch(opts: WatchOptions, onEvent: (event: WatchEvent<T>) => void): Promise<void> {
    const what = `watch ${this.description}`;
    let res: http.IncomingMessage;
    try {
      res = await this.#request(
        {
          watch: "true",
          allowWatchBookmarks: "true",
          resourceVersion: opts.resourceVersion,
          timeoutSeconds: String(opts.timeoutSeconds),
        },
        this.ref.metadataOnly ? `${METADATA_ONE},${JSON_TYPE}` : JSON_TYPE,
        opts.signal,
        (opts.timeoutSeconds + 30) * 1000,
      );
    } catch (e) {
      if (opts.signal.aborted) return;
      throw e;
    }
    if (res.statusCode !== 200) throw statusError(res.statusCode ?? 0, await this.#readAll(res), what);
    res.setEncoding("utf8");
    let pending = "";
    try {
      for await (const chunk of res as AsyncIterable<string>) {
        pending += chunk;
        let start = 0;
        let nl: number;
        while ((nl = pending.indexOf("\n", start)) >= 0) {
          const line = pending.slice(start, nl);
          start = nl + 1;
          if (line.trim() === "") continue;
          const event = JSON.parse(line) as { type: string; object: T & StatusObject };
          if (event.type === "ERROR") {
            const status = event.object as StatusObject;
            if (status.code === 410) {
              throw new GoneError(`${what}: ${status.message ?? "resource version expired"}`);
            }
            throw new ApiError(status.code ?? 0, `${what}: ${status.message ?? JSON.stringify(status)}`);
          }
          onEvent(event as WatchEvent<T>);
        }
        pending = start === 0 ? pending : pending.slice(start);
      }
    } catch (e) {
      if (opts.signal.aborted) return;
      throw e;
    } finally {
      res.destroy();
    }
  }
}
