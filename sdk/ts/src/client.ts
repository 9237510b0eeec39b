// A thin fetch client of the data-import API. The types are generated from
// the API's OpenAPI document by openapi-typescript (schema.d.ts, `make sdk`);
// this file adds what a generator cannot know, the same as the Go SDK:
//   - the organisation API key is exchanged for an access token (GraphQL
//     obtainToken), renewed with the refresh token when the API answers 401
//     token_expired or shortly before it expires;
//   - 429 and 500/502/503/504 answers and network errors are retried,
//     waiting Retry-After when the API sends one, else exponential backoff;
//   - every POST carries an Idempotency-Key, the same on each of its retries;
//   - errors are APIError, decoded from the API's one error envelope.
import type { components } from "./schema";

export type Schemas = components["schemas"];
export type Account = Schemas["Account"];
export type AccountStatus = Schemas["AccountStatus"];
export type CreateAccountRequest = Schemas["CreateAccountRequest"];
export type NotesRequest = Schemas["NotesRequest"];
export type NoteResult = Schemas["NoteResult"];
export type StageResult = Schemas["StageResult"];
export type FieldError = Schemas["FieldError"];
export type Job = Schemas["Job"];
export type JobState = Schemas["JobState"];
export type JobAccepted = Schemas["JobAccepted"];
export type JobCounters = Schemas["JobCounters"];
export type V2Accepted = Schemas["V2Accepted"];
export type V2AccountStatus = Schemas["V2AccountStatus"];
export type V2Event = Schemas["V2Event"];
export type V2Status = Schemas["V2Status"];
export type FeedEvent = Schemas["FeedEvent"];
export type FeedEventType = Schemas["FeedEventType"];
export type FeedPage = Schemas["FeedPage"];

/** One line's outcome in a job's results (GET …/jobs/{id}/results/, NDJSON). */
export interface JobResult {
  line: number;
  external_account_number: string;
  outcome: "invalid" | "duplicate_line" | "staged" | "created" | "already_imported" | "failed" | "cancelled" | "pending" | "in_progress";
  platform_account_number: string | null;
  code?: string;
  detail?: string;
  errors?: FieldError[];
}
export type JobResultsOutcome = "all" | "failed" | JobResult["outcome"];

/** A job's body: the NDJSON itself, or a function opening it anew for each try (a file: () => createReadStream(path)). */
export type JobBody = string | Uint8Array | (() => AsyncIterable<Uint8Array | string> | Iterable<Uint8Array | string>);

export interface JobOptions {
  /** Stage only, do not create (create=false). */
  stageOnly?: boolean;
  /** Create each account and roll it back. */
  dryRun?: boolean;
  scheduleWindowStart?: Date | string;
  scheduleWindowEnd?: Date | string;
  /** Compress on the fly (Content-Encoding: gzip). */
  gzip?: boolean;
  /** Sent with every try; default a new UUID. Keep it (with the same body) to resume after a crash: the API answers with the same job. */
  idempotencyKey?: string;
  /** Bytes of a body given as a function, for onProgress's total. */
  size?: number;
  /** Called as the body is read for sending: NDJSON bytes so far and the total (-1 when unknown); a retry starts again from 0. */
  onProgress?: (sent: number, total: number) => void;
}

export interface V2Window {
  start?: Date | string;
  end?: Date | string;
  dryRun?: boolean;
}

export interface EventsOptions {
  types?: FeedEventType[];
  importSupplier?: string;
  /** Page size, 1 to 1000 (default 100). */
  limit?: number;
  /** Long-poll of an empty page, e.g. "20s" (default), at most "30s". */
  wait?: string;
  /** Called with each page's next cursor once its events were yielded. */
  onCursor?: (next: string) => void;
  /** Ends the follow between pages. */
  signal?: AbortSignal;
}

interface RawBody {
  headers?: Record<string, string>;
  open?: () => BodyInit | undefined;
}

/** Whether a job's state is final. */
export function jobFinished(state: JobState): boolean {
  return state === "COMPLETED" || state === "FAILED" || state === "CANCELLED";
}

/** An instant in the API's one form: YYYY-MM-DDTHH:MM:SSZ. */
function wireTime(t: Date | string): string {
  const d = typeof t === "string" ? new Date(t) : t;
  return d.toISOString().replace(/\.\d{3}Z$/, "Z");
}

function v2Path(supplier: string, external: string): string {
  return `/v2/data-import/accounts/${encodeURIComponent(supplier)}/${encodeURIComponent(external)}/`;
}

/** The body's chunks as bytes, from the start. */
async function* chunksOf(body: JobBody): AsyncGenerator<Uint8Array> {
  const enc = new TextEncoder();
  if (typeof body === "string") return yield enc.encode(body);
  if (body instanceof Uint8Array) return yield body;
  for await (const c of body()) yield typeof c === "string" ? enc.encode(c) : c;
}

/** An answer of 400 or more, from the API's error envelope. */
export class APIError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly errors: FieldError[],
    readonly requestId: string,
    readonly retryAfterMs: number | undefined,
    readonly body: string,
  ) {
    super(`data-import API: ${status} ${code}: ${detail}`);
    this.name = "APIError";
  }
}

export interface Options {
  /** Retries after a retryable answer or a network error (default 8; 0: none). */
  retryMax?: number;
  /** Bounds of the backoff when the API sends no Retry-After (default 250 ms, 10 s). */
  retryWaitMinMs?: number;
  retryWaitMaxMs?: number;
  /** Cap on one wait asked by Retry-After (default 5 minutes). */
  maxRetryAfterMs?: number;
  /** Called before each retry with the answer's status (0: network error). */
  onRetry?: (status: number) => void;
  fetch?: typeof fetch;
}

export interface Created {
  platformAccountNumber?: string;
  inProgress: boolean;
  statusUrl?: string;
}

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

const graphQLPath = "/v1/graphql/";
const retryable = new Set([429, 500, 502, 503, 504]);
const obtainWithKey = "mutation($v: String!) { obtainToken(input: {APIKey: $v}) { token refreshToken refreshExpiresIn } }";
const obtainWithRefresh = "mutation($v: String!) { obtainToken(input: {refreshToken: $v}) { token refreshToken refreshExpiresIn } }";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function envelopeCode(text: string): string {
  try {
    const v = JSON.parse(text) as { code?: unknown };
    return typeof v.code === "string" ? v.code : "";
  } catch {
    return "";
  }
}

/** Retry-After in milliseconds (seconds or an HTTP date), if any. */
function retryAfterMs(h: Headers): number | undefined {
  const v = h.get("Retry-After");
  if (!v) return undefined;
  if (/^[0-9]+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(at - Date.now(), 0);
}

function apiError(a: Answer): APIError {
  const requestId = a.headers.get("X-Request-ID") ?? "";
  try {
    const e = JSON.parse(a.text) as { code?: string; detail?: string; errors?: FieldError[] };
    if (typeof e.code === "string" && e.code !== "") {
      return new APIError(a.status, e.code, e.detail ?? "", e.errors ?? [], requestId, retryAfterMs(a.headers), a.text);
    }
  } catch {
    // not the envelope: a proxy's page, say
  }
  return new APIError(a.status, `http_${a.status}`, a.text.trim().slice(0, 300), [], requestId, retryAfterMs(a.headers), a.text);
}

/** The exp claim of a JWT in milliseconds, without verifying it (the API does). */
function jwtExpiryMs(token: string): number | undefined {
  const parts = token.split(".");
  if (parts.length !== 3) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(parts[1], "base64url").toString("utf8")) as { exp?: number };
    return typeof claims.exp === "number" ? claims.exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

export class DataImportClient {
  private readonly base: string;
  private readonly fetch: typeof fetch;
  private token = "";
  private expiresMs: number | undefined;
  private marginMs = 0;
  private refresh = "";
  private refreshExpiresMs = 0;
  private pending: Promise<void> | undefined;

  constructor(
    baseURL: string,
    private readonly apiKey: string,
    private readonly opts: Options = {},
  ) {
    if (!apiKey) throw new Error("sdk: an API key is required");
    this.base = baseURL.replace(/\/+$/, "");
    this.fetch = opts.fetch ?? fetch;
  }

  // ---- the common flow ----

  /** Checks an account without storing it; returns it as the API read it. */
  validateAccount(account: Account | unknown): Promise<Account> {
    return this.json<Account>("POST", "/v1/data-import/validate-account/", account);
  }

  /** Stores (or replaces) an account's import data. */
  stageAccount(account: Account | unknown): Promise<StageResult> {
    return this.json<StageResult>("POST", "/v1/data-import/account-import-process/create-or-update/", account);
  }

  /** Creates a staged account; inProgress when the API is still at it (poll status). */
  async createAccount(req: CreateAccountRequest): Promise<Created> {
    const a = await this.call("POST", "/v1/data-import/account-import-process/process/", req);
    const body = JSON.parse(a.text) as Schemas["CreateAccountResult"] & Schemas["CreateAccountAccepted"];
    if (a.status === 202) return { inProgress: true, statusUrl: body.status_url };
    return { inProgress: false, platformAccountNumber: body.platform_account_number };
  }

  /** One account's import status. */
  status(supplier: string, external: string): Promise<AccountStatus> {
    const path = `/v1/data-import/account-transfer-status/${encodeURIComponent(supplier)}/${encodeURIComponent(external)}/`;
    return this.json<AccountStatus>("GET", path);
  }

  /** Polls status until the account is created or its last attempt failed. */
  async waitCreated(supplier: string, external: string, intervalMs = 200, timeoutMs = 60_000): Promise<AccountStatus> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const st = await this.status(supplier, external);
      if (st.status === "COMPLETED" || (st.latest_error && st.status !== "IN_PROGRESS")) return st;
      if (Date.now() > deadline) throw new Error(`sdk: ${external} not created after ${timeoutMs} ms (${st.status})`);
      await sleep(intervalMs);
    }
  }

  /** Adds notes to an imported account. */
  createNotes(req: NotesRequest): Promise<NoteResult[]> {
    return this.json<NoteResult[]>("POST", "/v1/data-import/notes/create/", req);
  }

  // ---- bulk jobs ----

  /**
   * Uploads NDJSON accounts (one account object per line) as a bulk job and
   * resolves once the API has stored the whole body (202). The body is sent
   * as a stream; a retry (same Idempotency-Key) reads it again from the
   * start, so give a function that opens it (`() => createReadStream(path)`)
   * for a file, or the bytes themselves.
   */
  async uploadJob(supplier: string, team: string, body: JobBody, opts: JobOptions = {}): Promise<JobAccepted> {
    const q = new URLSearchParams({ import_supplier: supplier });
    if (team) q.set("operations_team_name", team);
    if (opts.stageOnly) q.set("create", "false");
    if (opts.dryRun) q.set("dry_run", "true");
    if (opts.scheduleWindowStart) q.set("schedule_window_start", wireTime(opts.scheduleWindowStart));
    if (opts.scheduleWindowEnd) q.set("schedule_window_end", wireTime(opts.scheduleWindowEnd));
    const headers: Record<string, string> = { "Content-Type": "application/x-ndjson" };
    if (opts.idempotencyKey) headers["Idempotency-Key"] = opts.idempotencyKey;
    if (opts.gzip) headers["Content-Encoding"] = "gzip";
    const total = typeof body === "string" ? Buffer.byteLength(body) : body instanceof Uint8Array ? body.byteLength : (opts.size ?? -1);
    const open = (): BodyInit => {
      let sent = 0;
      const chunks = chunksOf(body);
      let stream = new ReadableStream<Uint8Array>({
        async pull(ctl) {
          const next = await chunks.next();
          if (next.done) return ctl.close();
          sent += next.value.byteLength;
          opts.onProgress?.(sent, total);
          ctl.enqueue(next.value);
        },
      });
      if (opts.gzip) stream = stream.pipeThrough(new CompressionStream("gzip") as unknown as ReadableWritablePair<Uint8Array, Uint8Array>);
      return stream as unknown as BodyInit;
    };
    const a = await this.call("POST", `/v1/data-import/jobs/?${q}`, undefined, { headers, open });
    return JSON.parse(a.text) as JobAccepted;
  }

  /** A job's state and counters. */
  job(id: number): Promise<Job> {
    return this.json<Job>("GET", `/v1/data-import/jobs/${id}/`);
  }

  /** Stops a job's lines not yet started (what was created stays). */
  cancelJob(id: number): Promise<Job> {
    return this.json<Job>("POST", `/v1/data-import/jobs/${id}/cancel/`);
  }

  /**
   * Re-runs the job's failed lines whose field errors match `code`/`attr` (both optional) from their
   * staged payloads, once their cause was fixed; resolves to how many went back (follow with waitJob).
   * A job RECEIVING, CANCELLED or FAILED: APIError 409 job_not_retryable.
   */
  async retryJob(id: number, filter: { code?: string; attr?: string } = {}): Promise<number> {
    const q = new URLSearchParams();
    if (filter.code) q.set("code", filter.code);
    if (filter.attr) q.set("attr", filter.attr);
    const r = await this.json<{ retried: number }>("POST", `/v1/data-import/jobs/${id}/retry/?${q}`);
    return r.retried;
  }

  /** Polls a job until its state is final (COMPLETED, FAILED, CANCELLED). */
  async waitJob(id: number, opts: { intervalMs?: number; timeoutMs?: number; onUpdate?: (job: Job) => void } = {}): Promise<Job> {
    const deadline = Date.now() + (opts.timeoutMs ?? 10 * 60_000);
    for (;;) {
      const j = await this.job(id);
      opts.onUpdate?.(j);
      if (jobFinished(j.state)) return j;
      if (Date.now() > deadline) throw new Error(`sdk: job ${id} not finished after ${opts.timeoutMs} ms (${j.state})`);
      await sleep(opts.intervalMs ?? 1000);
    }
  }

  /**
   * A job's per-line results, in line order, streamed as they download.
   * outcome: "all" (default), "failed" (invalid or failed), or one outcome.
   */
  async *jobResults(id: number, outcome?: JobResultsOutcome): AsyncGenerator<JobResult> {
    const q = outcome ? `?outcome=${encodeURIComponent(outcome)}` : "";
    const resp = await this.stream("GET", `/v1/data-import/jobs/${id}/results/${q}`);
    let rest = "";
    const dec = new TextDecoder();
    for await (const chunk of resp.body as unknown as AsyncIterable<Uint8Array>) {
      rest += dec.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = rest.indexOf("\n")) >= 0) {
        const line = rest.slice(0, nl).trim();
        rest = rest.slice(nl + 1);
        if (line) yield JSON.parse(line) as JobResult;
      }
    }
    rest += dec.decode();
    if (rest.trim()) yield JSON.parse(rest) as JobResult;
  }

  // ---- v2 ----

  /** Hands over an account to be created within the window; answered at once (PENDING). */
  v2Create(account: Account | unknown, window: V2Window = {}): Promise<V2Accepted> {
    const task: Record<string, unknown> = {};
    if (window.start) task.schedule_window_start = wireTime(window.start);
    if (window.end) task.schedule_window_end = wireTime(window.end);
    if (window.dryRun) task.is_dry_run = true;
    const req: Record<string, unknown> = { payload: account };
    if (Object.keys(task).length > 0) req.task_params = task;
    return this.json<V2Accepted>("POST", "/v2/data-import/accounts/", req);
  }

  /** An account's v2 status. */
  v2Status(supplier: string, external: string): Promise<V2AccountStatus> {
    return this.json<V2AccountStatus>("GET", v2Path(supplier, external));
  }

  /** Polls v2Status until the status is final (or PENDING and not scheduled). */
  async v2Wait(supplier: string, external: string, intervalMs = 1000, timeoutMs = 5 * 60_000): Promise<V2AccountStatus> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const st = await this.v2Status(supplier, external);
      if ((st.status !== "PENDING" && st.status !== "IN_PROGRESS") || (st.status === "PENDING" && !st.scheduled)) return st;
      if (Date.now() > deadline) throw new Error(`sdk: ${external} not final after ${timeoutMs} ms (${st.status})`);
      await sleep(intervalMs);
    }
  }

  /** The account's timeline, oldest first: its first page of up to 500 events (longer timelines: follow the Link header with call()). */
  v2Events(supplier: string, external: string): Promise<V2Event[]> {
    return this.json<V2Event[]>("GET", `${v2Path(supplier, external)}events/`);
  }

  /** Cancels a PENDING account's scheduled attempt (once started: APIError 409 import_process_not_cancellable). */
  v2Cancel(supplier: string, external: string): Promise<V2Accepted> {
    return this.json<V2Accepted>("POST", `${v2Path(supplier, external)}cancel/`);
  }

  // ---- events ----

  /**
   * Follows the organisation's event feed from the cursor `after` ("" for
   * its start, "latest" for from now on), with long polls, yielding each
   * event once in commit order; runs until the caller stops (break) or
   * opts.signal aborts. opts.onCursor gets each page's next cursor after
   * its events were yielded: save it to resume.
   */
  async *events(after = "", opts: EventsOptions = {}): AsyncGenerator<FeedEvent> {
    for (;;) {
      if (opts.signal?.aborted) return;
      const q = new URLSearchParams({ wait: opts.wait ?? "20s" });
      if (after) q.set("after", after);
      if (opts.limit) q.set("limit", String(opts.limit));
      if (opts.importSupplier) q.set("import_supplier", opts.importSupplier);
      for (const t of opts.types ?? []) q.append("type", t);
      const page = await this.json<FeedPage>("GET", `/v1/data-import/events/?${q}`);
      for (const e of page.events) yield e;
      after = page.next;
      opts.onCursor?.(after);
    }
  }

  // ---- any operation ----

  /** Sends a request with authentication, retries and an idempotency key; resolves with the JSON of a 2xx answer. */
  async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const a = await this.call(method, path, body);
    return JSON.parse(a.text) as T;
  }

  /** Like json, but resolves with the raw 2xx answer. */
  async call(method: string, path: string, body?: unknown, raw?: RawBody): Promise<Answer> {
    const r = await this.exchangeWithToken(method, path, body, raw, false);
    return r as Answer;
  }

  /** A 2xx answer whose body is left to the caller to read (a download). */
  private async stream(method: string, path: string): Promise<Response> {
    return (await this.exchangeWithToken(method, path, undefined, undefined, true)) as Response;
  }

  private async exchangeWithToken(method: string, path: string, body: unknown, raw: RawBody | undefined, keepBody: boolean): Promise<Answer | Response> {
    const headers: Record<string, string> = { ...(raw?.headers ?? {}) };
    if (method === "POST" && path !== graphQLPath && !headers["Idempotency-Key"]) headers["Idempotency-Key"] = crypto.randomUUID();
    const open = raw?.open ?? (body === undefined ? () => undefined : ((payload: string) => () => payload)(JSON.stringify(body)));
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let renewed = false;
    for (;;) {
      let token = "";
      if (path !== graphQLPath) token = await this.currentToken();
      const a = await this.send(method, path, open, { ...headers, ...(token ? { Authorization: `Token ${token}` } : {}) }, keepBody);
      if (a.status >= 200 && a.status < 300) return a.resp ?? a;
      const code = envelopeCode(a.text);
      if (a.status === 401 && !renewed && path !== graphQLPath && (code === "token_expired" || code === "authentication_failed")) {
        renewed = true;
        if (this.token === token) this.token = "";
        continue;
      }
      throw apiError(a);
    }
  }

  /** One request with its retries; the same headers (and so the same key) on every try, the body opened anew for each. */
  private async send(
    method: string,
    path: string,
    open: () => BodyInit | undefined,
    headers: Record<string, string>,
    keepBody = false,
  ): Promise<Answer & { resp?: Response }> {
    const retryMax = this.opts.retryMax ?? 8;
    const lo = this.opts.retryWaitMinMs ?? 250;
    const hi = this.opts.retryWaitMaxMs ?? 10_000;
    const maxAfter = this.opts.maxRetryAfterMs ?? 300_000;
    for (let attempt = 0; ; attempt++) {
      let a: (Answer & { resp?: Response }) | undefined;
      let failure: unknown;
      try {
        const body = open();
        const init: RequestInit & { duplex?: "half" } = { method, headers: { Accept: "application/json", ...headers }, body };
        if (body instanceof ReadableStream) init.duplex = "half"; // a streamed upload
        const resp = await this.fetch(this.base + path, init);
        if (keepBody && resp.status >= 200 && resp.status < 300) {
          a = { status: resp.status, headers: resp.headers, text: "", resp };
        } else {
          a = { status: resp.status, headers: resp.headers, text: await resp.text() };
        }
      } catch (e) {
        failure = e;
      }
      const again = a === undefined || retryable.has(a.status) || (a.status === 409 && envelopeCode(a.text) === "idempotency_key_in_use");
      if (!again || attempt >= retryMax) {
        if (a === undefined) throw failure;
        return a;
      }
      this.opts.onRetry?.(a?.status ?? 0);
      const after = a ? retryAfterMs(a.headers) : undefined;
      const backoff = Math.min(hi, lo * 2 ** attempt);
      await sleep(after !== undefined ? Math.min(after, maxAfter) : backoff / 2 + Math.random() * (backoff / 2));
    }
  }

  // ---- tokens ----

  /** A usable access token, obtained or renewed when needed (one exchange at a time). */
  async currentToken(): Promise<string> {
    while (!this.token || (this.expiresMs !== undefined && Date.now() + this.marginMs >= this.expiresMs)) {
      this.pending ??= this.obtain().finally(() => (this.pending = undefined));
      await this.pending;
    }
    return this.token;
  }

  private async obtain(): Promise<void> {
    if (this.refresh && Date.now() < this.refreshExpiresMs) {
      try {
        return await this.exchange(obtainWithRefresh, this.refresh);
      } catch (e) {
        if (!(e instanceof APIError)) throw e;
      }
    }
    return this.exchange(obtainWithKey, this.apiKey);
  }

  private async exchange(query: string, v: string): Promise<void> {
    const out = await this.json<Schemas["GraphQLResponse"]>("POST", graphQLPath, { query, variables: { v } });
    const err = out.errors?.[0];
    if (err) throw new APIError(401, err.extensions?.errorCode ?? "graphql_error", err.message, [], "", undefined, JSON.stringify(out));
    const t = out.data?.obtainToken;
    if (!t?.token) throw new Error("sdk: obtain token: the answer has no token");
    this.token = t.token;
    this.expiresMs = jwtExpiryMs(t.token);
    this.marginMs = this.expiresMs === undefined ? 0 : Math.min(30_000, (this.expiresMs - Date.now()) / 10);
    this.refresh = t.refreshToken ?? "";
    this.refreshExpiresMs = (t.refreshExpiresIn ?? 0) * 1000;
  }
}
