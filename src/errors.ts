// The worker's one error base class: a stable string `code` callers branch on and a `retryable` flag that says
// whether trying the same step again can succeed. Adapters translate library errors into subclasses of it;
// messages never carry secrets (API keys, referral tokens, webhook secrets).

export interface WorkerErrorOptions {
  readonly retryable?: boolean;
  readonly cause?: unknown;
}

export class WorkerError extends Error {
  readonly code: string;
  readonly retryable: boolean;

  constructor(code: string, message: string, options: WorkerErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}

export function isWorkerError(value: unknown): value is WorkerError {
  return value instanceof WorkerError;
}
