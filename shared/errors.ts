// The one definition of every error code the API answers with. The errors page, the OpenAPI
// document and every handler read from here.

export interface ErrorDef {
  status: number;
  meaning: string;
  action: string;
  retryable: boolean;
}

export const ERRORS = {
  bad_request: {
    status: 400,
    retryable: false,
    meaning: 'The request is malformed: invalid JSON, a missing or wrongly typed field, a value out of range, or an unknown query value.',
    action: 'Fix the request; `message` and `details` name the field. Nothing was charged.',
  },
  bad_url: {
    status: 400,
    retryable: false,
    meaning: 'The target URL is not an absolute http(s) URL, or it is malformed.',
    action: 'Send an absolute http:// or https:// URL. Nothing was charged.',
  },
  no_output: {
    status: 400,
    retryable: false,
    meaning: '`websitepro`: no output was requested.',
    action: 'Name at least one of metadata, markdown, text, html, pdf. Nothing was charged.',
  },
  unknown_browser: {
    status: 400,
    retryable: false,
    meaning: '`shots`: a browser id or version is not offered by any running browser pool.',
    action: 'Pick ids and versions from GET /v1/services/shots. Nothing was charged.',
  },
  bad_viewport: {
    status: 400,
    retryable: false,
    meaning: '`shots`: a viewport is not a preset, not WIDTHxHEIGHT, out of 320..3840 x 320..2400, or more than 3 were given.',
    action: 'Use at most 3 viewports within the limits. Nothing was charged.',
  },
  bad_relay_url: {
    status: 400,
    retryable: false,
    meaning: '`labs`: the relay address is not wss://host[:port][/path], ws://..., or a bare host.',
    action: 'Send a relay address in one of those forms. Nothing was charged.',
  },
  bad_port: {
    status: 400,
    retryable: false,
    meaning: '`labs`: the relay port is not one of the allowed ports of GET /v1/services/labs.',
    action: 'Use an allowed port. Nothing was charged.',
  },
  bad_webhook: {
    status: 400,
    retryable: false,
    meaning: '`labs`: the webhook is not a public https URL.',
    action: 'Send a public https:// URL or leave webhook out. Nothing was charged.',
  },
  no_checks: {
    status: 400,
    retryable: false,
    meaning: '`labs`: neither a module nor a selectable check was given.',
    action: 'Give `modules` and/or `checks` from GET /v1/services/labs. Nothing was charged.',
  },
  blocked_address: {
    status: 400,
    retryable: false,
    meaning: 'The target resolves to a private, local or otherwise non-public address.',
    action: 'Only public targets are allowed. Nothing was charged.',
  },
  unreachable: {
    status: 400,
    retryable: true,
    meaning: 'The target does not resolve or does not answer.',
    action: 'Check the address and that the target is up, then retry. Nothing was charged.',
  },
  payload_too_large: {
    status: 413,
    retryable: false,
    meaning: 'The request body is larger than 64 KB.',
    action: 'Send a smaller body. Nothing was read past the limit and nothing was charged.',
  },
  unsupported_media_type: {
    status: 415,
    retryable: false,
    meaning: 'The body is not sent as application/json.',
    action: 'Send the body as JSON with `Content-Type: application/json`.',
  },
  unauthorized: {
    status: 401,
    retryable: false,
    meaning: 'The Authorization header is missing, malformed, or the key is wrong.',
    action: 'Send `Authorization: Bearer <key>` with a key made on the account page.',
  },
  insufficient_funds: {
    status: 402,
    retryable: false,
    meaning: 'The balance is lower than the cost of the job. The body carries `needed`, `balance` and `topup`.',
    action: 'Top up (POST /v1/topups with at least `topup.eur`), then retry. Nothing was charged.',
  },
  not_found: {
    status: 404,
    retryable: false,
    meaning: 'No such path, job, result or top-up, or it belongs to another key.',
    action: 'Check the id and the key.',
  },
  unknown_service: {
    status: 404,
    retryable: false,
    meaning: 'The service is not one of websitepro, shots, labs.',
    action: 'Use a service listed by GET /v1/services.',
  },
  method_not_allowed: {
    status: 405,
    retryable: false,
    meaning: 'The path exists but not with this method. The `Allow` header lists the methods it takes.',
    action: 'Use one of the methods in `Allow`.',
  },
  idempotency_key_in_use: {
    status: 409,
    retryable: true,
    meaning: 'A job or top-up creation with this `Idempotency-Key` is still running (or its outcome is not settled yet).',
    action: "Wait `Retry-After` seconds and send the same request with the same key again: it answers the first request's answer.",
  },
  idempotency_key_reused: {
    status: 422,
    retryable: false,
    meaning: 'This `Idempotency-Key` was used in the last 24 hours with a different request (another path or body).',
    action: 'Send a new key for a new request; reuse a key only to retry the very same request. Nothing was charged.',
  },
  not_ready: {
    status: 409,
    retryable: true,
    meaning: 'The result or zip is still being produced.',
    action: 'Poll GET /v1/jobs/{id}?wait=25 until the job is finished, then download.',
  },
  expired: {
    status: 410,
    retryable: false,
    meaning: "The result was deleted after its retention period (the job's `expiresAt`).",
    action: 'Run the job again if you still need it.',
  },
  rate_limited: {
    status: 429,
    retryable: true,
    meaning: 'Too many requests for this key (or this address, for public endpoints). `Retry-After` says when to retry.',
    action: 'Wait `Retry-After` seconds, then retry.',
  },
  relay_busy: {
    status: 429,
    retryable: true,
    meaning: '`labs`: this relay was tested too often in the last hour, by all customers together.',
    action: 'Wait `Retry-After` seconds, then retry. Nothing was charged.',
  },
  invoice_failed: {
    status: 502,
    retryable: true,
    meaning: 'The Lightning backend could not create an invoice.',
    action: 'Retry later. Nothing was charged.',
  },
  internal: {
    status: 500,
    retryable: true,
    meaning: 'An unexpected error. If it happened after a charge, the charge was refunded.',
    action: 'Retry; report the `X-Request-Id` header if it keeps happening.',
  },
  service_unavailable: {
    status: 503,
    retryable: true,
    meaning: 'No instance of the service (or of a part it needs) is running.',
    action: 'Retry later. Nothing was charged.',
  },
  busy: { status: 503, retryable: true, meaning: 'The job queue is full.', action: 'Retry later (`Retry-After`). Nothing was charged.' },
} as const satisfies Record<string, ErrorDef>;

export type ErrorCode = keyof typeof ERRORS;
export const ERROR_CODES = Object.keys(ERRORS) as ErrorCode[];

/** An error with a stable code. Crosses NATS as `{code, message, details}` and is rebuilt as the same class. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;
  readonly headers: Record<string, string> | undefined;
  constructor(code: ErrorCode, message?: string, details?: Record<string, unknown>, headers?: Record<string, string>) {
    super(message ?? ERRORS[code].meaning);
    this.name = 'ApiError';
    this.code = code;
    this.details = details;
    this.headers = headers;
  }
  get status(): number {
    return ERRORS[this.code].status;
  }
  get retryable(): boolean {
    return ERRORS[this.code].retryable;
  }
  toJSON() {
    return { code: this.code, message: this.message, ...(this.details ?? {}) };
  }
  static isCode(s: unknown): s is ErrorCode {
    return typeof s === 'string' && Object.hasOwn(ERRORS, s);
  }
  static fromJSON(o: { code?: unknown; message?: unknown; [k: string]: unknown }): ApiError {
    const { code, message, ...details } = o;
    // headers do not cross NATS: a `retryAfter` (seconds) in the details is the Retry-After the service meant
    const retry = details.retryAfter;
    const headers = typeof retry === 'number' && retry > 0 ? { 'retry-after': String(retry) } : undefined;
    return new ApiError(ApiError.isCode(code) ? code : 'internal', typeof message === 'string' ? message : undefined, details, headers);
  }
}

/** Where the errors page lives; every error body points at its code's anchor. */
export const ERRORS_PATH = '/docs/errors';
export const errorDocUrl = (baseUrl: string, code: ErrorCode) => `${baseUrl}${ERRORS_PATH}#${code}`;
