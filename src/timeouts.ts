// One promise raced against a timer, the timer cleared either way: the error says what did not happen in time.
export function withTimeout<T>(promise: Promise<T>, ms: number, timedOut: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timedOut()), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * The longest a command handler waits for anything outside it (a lease another replica holds, a reload or a wake of
 * the order under way) before it gives the command up as retryable (its offset not committed: it is delivered
 * again). kafkajs rejoins its group only between messages: a handler that waits past the session timeout has the
 * replica evicted while it still believes it owns the partition. A third of the session leaves the rest of it for
 * the command's own work and the heartbeat after it.
 */
export function commandWaitBoundOf(sessionTimeoutMs: number): number {
  return Math.max(1, Math.floor(sessionTimeoutMs / 3));
}

/** The Kafka session timeout when none is configured (KAFKA_SESSION_TIMEOUT_MS's default, kafkajs's too). */
export const defaultKafkaSessionTimeoutMs = 15_000;
