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

  // ---- any operation ----

  /** Sends a request with authentication, retries and an idempotency key; resolves with the JSON of a 2xx answer. */
  async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const a = await this.call(method, path, body);
    return JSON.parse(a.text) as T;
  }

  /** Like json, but resolves with the raw 2xx answer. */
  async call(method: string, path: string, body?: unknown): Promise<Answer> {
    const headers: Record<string, string> = {};
    if (method === "POST" && path !== graphQLPath) headers["Idempotency-Key"] = crypto.randomUUID();
    const payload = body === undefined ? undefined : JSON.stringify(body);
    let renewed = false;
    for (;;) {
      let token = "";
      if (path !== graphQLPath) token = await this.currentToken();
      const a = await this.send(method, path, payload, { ...headers, ...(token ? { Authorization: `Token ${token}` } : {}) });
      if (a.status >= 200 && a.status < 300) return a;
      const code = envelopeCode(a.text);
      if (a.status === 401 && !renewed && path !== graphQLPath && (code === "token_expired" || code === "authentication_failed")) {
        renewed = true;
        if (this.token === token) this.token = "";
        continue;
      }
      throw apiError(a);
    }
  }

  /** One request with its retries; the same headers (and so the same key) on every try. */
  private async send(method: string, path: string, payload: string | undefined, headers: Record<string, string>): Promise<Answer> {
    const retryMax = this.opts.retryMax ?? 8;
    const lo = this.opts.retryWaitMinMs ?? 250;
    const hi = this.opts.retryWaitMaxMs ?? 10_000;
    const maxAfter = this.opts.maxRetryAfterMs ?? 300_000;
    for (let attempt = 0; ; attempt++) {
      let a: Answer | undefined;
      let failure: unknown;
      try {
        const resp = await this.fetch(this.base + path, {
          method,
          headers: { Accept: "application/json", ...(payload !== undefined ? { "Content-Type": "application/json" } : {}), ...headers },
          body: payload,
        });
        a = { status: resp.status, headers: resp.headers, text: await resp.text() };
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
