/**
 * The page files (control/dashboard/assets/, copied into the image with control/), read once at start into
 * memory: a request can only name a file that was there, so no path from a URL ever reaches the filesystem.
 */
import { join, relative } from "node:path";

export interface Asset {
  body: Uint8Array<ArrayBuffer>;
  contentType: string;
  etag: string;
}

export type Assets = ReadonlyMap<string, Asset>;

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".woff2": "font/woff2",
  ".json": "application/json; charset=utf-8",
};

export const ASSETS_DIR = new URL("./assets/", import.meta.url).pathname;

export function contentTypeOf(name: string): string | undefined {
  const dot = name.lastIndexOf(".");
  return dot < 0 ? undefined : TYPES[name.slice(dot)];
}

async function* files(dir: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    const p = join(dir, e.name);
    if (e.isDirectory) yield* files(p);
    else if (e.isFile) yield p;
  }
}

/** Every file of `dir` with a known type, keyed by its path below `dir` (`pages/overview.js`). */
export async function loadAssets(dir: string = ASSETS_DIR): Promise<Assets> {
  const out = new Map<string, Asset>();
  for await (const p of files(dir)) {
    const name = relative(dir, p);
    const contentType = contentTypeOf(name);
    if (!contentType || name.endsWith("_test.js")) continue;
    const body = await Deno.readFile(p) as Uint8Array<ArrayBuffer>;
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", body));
    const etag = `"${Array.from(digest.slice(0, 8), (b) => b.toString(16).padStart(2, "0")).join("")}"`;
    out.set(name, { body, contentType, etag });
  }
  return out;
}
