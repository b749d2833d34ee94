import { configurationError, type RateLimit, TollgateError } from './errors.js';
import { VERSION } from './version.js';

/** What every call may set for itself; the client's options give the defaults. */
export interface RequestOptions {
  /**
   * Milliseconds the whole call may take, waits before retries included; past it the call fails with a
   * TollgateError (`error` "Timeout"). Default: the client's, else 80 000.
   */
  readonly timeout?: number;
  /** Ends the call (and any wait before a retry) when aborted: a TollgateError (`error` "Aborted"). */
  readonly signal?: AbortSignal;
  /**
   * How many times a 429 is retried after its `Retry-After` (GETs, and POSTs with an idempotency key).
   * Default 2. A `Retry-After` longer than what is left of `timeout` is not waited for: the 429 is thrown.
   */
  readonly maxRetries?: number;
}

/** Settings shared by both clients. */
export interface TransportOptions extends RequestOptions {
  /** Where Tollgate is served, e.g. `https://billing.example.com`. */
  readonly baseUrl: string;
  /** The `fetch` to use; the platform's by default. */
  readonly fetch?: typeof fetch;
  /** How to wait before a retry; a timer by default (tests and custom schedulers may replace it). */
  readonly sleep?: (ms: number) => Promise<void>;
}

export interface RequestSpec {
  readonly method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  readonly path: string;
  readonly query?: Readonly<Record<string, string | number | undefined>>;
  readonly body?: unknown;
  readonly token?: string;
  readonly idempotencyKey?: string;
  /** Sees a successful answer's headers (e.g. `Tollgate-Entitlements-Version`). */
  readonly onHeaders?: (headers: Headers) => void;
}

/** Stripe's clients' default: room for one wait of a full rate-limit window (60 s). */
const DEFAULT_TIMEOUT_MS = 80_000;
const DEFAULT_MAX_RETRIES = 2;

/** Sent by servers only: in a page the browser names itself, and a custom one would need a CORS preflight. */
export const USER_AGENT = `tollgate-client/${VERSION}`;

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Whether this code runs in a web page. */
export function inBrowser(): boolean {
  const g = globalThis as { window?: unknown; document?: unknown };
  return typeof g.window !== 'undefined' && typeof g.document !== 'undefined';
}

function checkedTimeout(value: number | undefined, fallback: number): number {
  const timeout = value ?? fallback;
  if (typeof timeout !== 'number' || !(timeout > 0)) {
    throw configurationError('timeout must be a number of milliseconds greater than 0');
  }
  return timeout;
}

function checkedRetries(value: number | undefined, fallback: number): number {
  const retries = value ?? fallback;
  if (!Number.isInteger(retries) || retries < 0)
    throw configurationError('maxRetries must be a whole number ≥ 0');
  return retries;
}

/** Rejects as soon as `signal` aborts, whatever `wait` does. */
function untilAborted(wait: Promise<void>, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    wait.then(
      () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** One HTTP exchange with Tollgate: JSON in and out, the error envelope turned into TollgateError. */
export class Transport {
  readonly #baseUrl: string;
  readonly #defaults: { timeout: number; maxRetries: number; signal: AbortSignal | undefined };
  readonly #fetch: typeof fetch;
  readonly #sleep: (ms: number) => Promise<void>;

  constructor(options: TransportOptions) {
    if (typeof options?.baseUrl !== 'string' || !/^https?:\/\//.test(options.baseUrl)) {
      throw configurationError('baseUrl must be an absolute http(s) URL, e.g. https://billing.example.com');
    }
    this.#baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.#defaults = {
      timeout: checkedTimeout(options.timeout, DEFAULT_TIMEOUT_MS),
      maxRetries: checkedRetries(options.maxRetries, DEFAULT_MAX_RETRIES),
      signal: options.signal,
    };
    const platformFetch = globalThis.fetch?.bind(globalThis);
    this.#fetch = options.fetch ?? platformFetch;
    if (!this.#fetch) throw configurationError('no fetch: pass one in the options');
    this.#sleep = options.sleep ?? defaultSleep;
  }

  async request<T>(spec: RequestSpec, options: RequestOptions = {}): Promise<T> {
    const timeout = checkedTimeout(options.timeout, this.#defaults.timeout);
    const maxRetries = checkedRetries(options.maxRetries, this.#defaults.maxRetries);
    const url = new URL(this.#baseUrl + spec.path);
    for (const [name, value] of Object.entries(spec.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = { accept: 'application/json' };
    if (!inBrowser()) headers['user-agent'] = USER_AGENT;
    if (spec.token !== undefined) headers.authorization = `Bearer ${spec.token}`;
    if (spec.body !== undefined) headers['content-type'] = 'application/json';
    if (spec.idempotencyKey !== undefined) headers['idempotency-key'] = spec.idempotencyKey;
    const body = spec.body === undefined ? undefined : JSON.stringify(spec.body);
    // A refused request was not applied, but only a GET or an idempotent POST is safe to send twice.
    const retryable = spec.method === 'GET' || spec.idempotencyKey !== undefined;

    const deadline = Date.now() + timeout;
    const timer = new AbortController();
    const timeoutHandle = setTimeout(() => timer.abort(), timeout);
    const callerSignals = [this.#defaults.signal, options.signal].filter((s): s is AbortSignal => !!s);
    const signal = AbortSignal.any([timer.signal, ...callerSignals]);
    const stopped = (cause: unknown): TollgateError =>
      timer.signal.aborted && !callerSignals.some((s) => s.aborted)
        ? new TollgateError({
            statusCode: 0,
            error: 'Timeout',
            message: `Tollgate did not answer within ${timeout} ms`,
          })
        : new TollgateError({ statusCode: 0, error: 'Aborted', message: 'The call was aborted', cause });
    try {
      for (let attempt = 0; ; attempt++) {
        if (signal.aborted) throw stopped(signal.reason);
        let response: Response;
        try {
          response = await this.#fetch(url, { method: spec.method, headers, body, signal });
        } catch (cause) {
          if (signal.aborted) throw stopped(cause);
          throw new TollgateError({
            statusCode: 0,
            error: 'Network Error',
            message: `Tollgate could not be reached at ${this.#baseUrl}`,
            cause,
          });
        }
        if (response.ok) {
          spec.onHeaders?.(response.headers);
          let text: string;
          try {
            text = await response.text();
          } catch (cause) {
            throw signal.aborted ? stopped(cause) : cause;
          }
          return (text === '' ? undefined : JSON.parse(text)) as T;
        }
        const error = await errorOf(response);
        if (response.status !== 429 || !retryable || attempt >= maxRetries) throw error;
        const wait = (error.retryAfter ?? 1) * 1000;
        // Waiting past the deadline would only end in a timeout: the caller learns now, with Retry-After.
        if (wait >= deadline - Date.now()) throw error;
        try {
          await untilAborted(this.#sleep(wait), signal);
        } catch (cause) {
          throw signal.aborted ? stopped(cause) : cause;
        }
      }
    } finally {
      clearTimeout(timeoutHandle);
    }
  }
}

function numberHeader(response: Response, name: string): number | undefined {
  const value = response.headers.get(name);
  if (value === null || value.trim() === '') return undefined;
  const n = Number(value);
  return Number.isFinite(n) ? n : undefined;
}

function rateLimitOf(response: Response): RateLimit | undefined {
  const limit = numberHeader(response, 'x-ratelimit-limit');
  const remaining = numberHeader(response, 'x-ratelimit-remaining');
  const reset = numberHeader(response, 'x-ratelimit-reset');
  if (limit === undefined || remaining === undefined || reset === undefined) return undefined;
  return { limit, remaining, reset };
}

async function errorOf(response: Response): Promise<TollgateError> {
  let envelope: { statusCode?: unknown; error?: unknown; message?: unknown } = {};
  try {
    envelope = (await response.json()) as typeof envelope;
  } catch {
    // Not Tollgate's envelope (a proxy's page, say): the status speaks for itself.
  }
  return new TollgateError({
    statusCode: typeof envelope.statusCode === 'number' ? envelope.statusCode : response.status,
    error: typeof envelope.error === 'string' ? envelope.error : response.statusText,
    message: typeof envelope.message === 'string' ? envelope.message : `Tollgate answered ${response.status}`,
    rateLimit: rateLimitOf(response),
    retryAfter: numberHeader(response, 'retry-after'),
  });
}
