/**
 * A real headless Chromium (Debian's `chromium` package, listed in .ci/debian-packages) driven over the DevTools
 * protocol by puppeteer-core, which never downloads a browser of its own. Each launch gets a fresh temporary
 * profile; the browser is closed — killed if it does not close — and the profile removed when the session
 * closes or its signal aborts, so a failing test never leaves a Chromium behind.
 */
import puppeteer, { type Browser, type CDPSession, type Page } from "puppeteer-core";

export type { Browser, Page };

/** WEFT_CHROMIUM, else Debian's wrapper. */
export const CHROMIUM = Deno.env.get("WEFT_CHROMIUM") ?? "/usr/bin/chromium";

export interface BrowserSession {
  browser: Browser;
  /** Idempotent: closes the browser (SIGKILL after 5 s) and removes the profile. */
  close(): Promise<void>;
}

export interface LaunchOptions {
  /** Closes the browser when it aborts. */
  signal?: AbortSignal;
  executablePath?: string;
}

export async function launchBrowser(opts: LaunchOptions = {}): Promise<BrowserSession> {
  const executablePath = opts.executablePath ?? CHROMIUM;
  try {
    await Deno.stat(executablePath);
  } catch {
    throw new Error(
      `no Chromium at ${executablePath}: install Debian's chromium package (.ci/debian-packages) or set WEFT_CHROMIUM`,
    );
  }
  const profile = await Deno.makeTempDir({ prefix: "weft-chromium-" });
  let browser: Browser;
  try {
    browser = await puppeteer.launch({
      executablePath,
      headless: true,
      userDataDir: profile,
      // Root in a container has no user namespace sandbox; nothing but our own dashboard is loaded.
      args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check"],
      timeout: 30_000,
    });
  } catch (e) {
    await Deno.remove(profile, { recursive: true }).catch(() => {});
    throw new Error(`cannot start ${executablePath}: ${e instanceof Error ? e.message : e}`);
  }
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      const proc = browser.process();
      const killer = setTimeout(() => proc?.kill("SIGKILL"), 5_000);
      try {
        await browser.close();
      } catch {
        proc?.kill("SIGKILL");
      } finally {
        clearTimeout(killer);
        opts.signal?.removeEventListener("abort", onAbort);
      }
      await Deno.remove(profile, { recursive: true }).catch(() => {});
    })();
    return closing;
  };
  const onAbort = () => void close();
  if (opts.signal?.aborted) await close();
  else opts.signal?.addEventListener("abort", onAbort, { once: true });
  return { browser, close };
}

/**
 * Runs a JavaScript expression in the page and returns its (JSON-serialisable) value. Expressions are strings
 * so this code type-checks without the DOM library; each call site says what it reads.
 */
export async function pageEval<T>(page: Page, expression: string): Promise<T> {
  return await page.evaluate(expression) as T;
}

/** Waits until `expression` is truthy in the page, polling every animation frame; throws after timeoutMs. */
export async function waitForExpr(
  page: Page,
  expression: string,
  timeoutMs: number,
  what: string,
): Promise<void> {
  try {
    await page.waitForFunction(expression, { timeout: timeoutMs, polling: "raf" });
  } catch (e) {
    throw new Error(
      `${what}: not true within ${timeoutMs} ms (${expression}): ${e instanceof Error ? e.message : e}`,
    );
  }
}

/**
 * Bytes the page received over the network: per request the encoded (on-the-wire, headers included) length from
 * Network.loadingFinished, or for a response still streaming (an event stream) the encoded bytes received so far.
 */
export class NetworkBytes {
  #finished = new Map<string, number>();
  #streaming = new Map<string, number>();
  #requests = 0;

  static async attach(page: Page): Promise<NetworkBytes> {
    const n = new NetworkBytes();
    const cdp: CDPSession = await page.createCDPSession();
    cdp.on("Network.requestWillBeSent", () => n.#requests++);
    cdp.on("Network.dataReceived", (e: { requestId: string; encodedDataLength: number }) => {
      n.#streaming.set(e.requestId, (n.#streaming.get(e.requestId) ?? 0) + e.encodedDataLength);
    });
    cdp.on("Network.loadingFinished", (e: { requestId: string; encodedDataLength: number }) => {
      n.#streaming.delete(e.requestId);
      n.#finished.set(e.requestId, e.encodedDataLength);
    });
    await cdp.send("Network.enable");
    // Cold loads: the figures are what a first visit costs.
    await cdp.send("Network.setCacheDisabled", { cacheDisabled: true });
    return n;
  }

  total(): number {
    let sum = 0;
    for (const v of this.#finished.values()) sum += v;
    for (const v of this.#streaming.values()) sum += v;
    return sum;
  }

  requests(): number {
    return this.#requests;
  }
}

/**
 * Installed before any page script runs: records, in ms from navigation start (performance.timeOrigin), the
 * first animation frame after an element matching `selector` is in the DOM — the frame that paints the page's
 * main data. Read it with `meaningfulPaintMs`.
 */
export async function watchMeaningfulPaint(page: Page, selector: string): Promise<void> {
  const sel = JSON.stringify(selector);
  await page.evaluateOnNewDocument(`(() => {
    const seen = () => {
      if (window.__weftMeaningful !== undefined || !document.querySelector(${sel})) return false;
      window.__weftMeaningful = null;
      requestAnimationFrame(() => { window.__weftMeaningful = performance.now(); });
      return true;
    };
    const mo = new MutationObserver(() => { if (seen()) mo.disconnect(); });
    mo.observe(document, { childList: true, subtree: true, attributes: true });
  })()`);
}

export interface PaintTimes {
  /** First animation frame with the main data in the DOM, ms from navigation start. */
  meaningfulMs: number;
  /** The browser's first-contentful-paint entry, ms from navigation start. */
  fcpMs: number;
}

export async function meaningfulPaintMs(
  page: Page,
  timeoutMs: number,
  selector: string,
): Promise<PaintTimes> {
  await waitForExpr(
    page,
    "typeof window.__weftMeaningful === 'number'",
    timeoutMs,
    `first ${selector} painted`,
  );
  return await pageEval<PaintTimes>(
    page,
    `({ meaningfulMs: window.__weftMeaningful,
        fcpMs: (performance.getEntriesByName('first-contentful-paint')[0] || { startTime: NaN }).startTime })`,
  );
}
