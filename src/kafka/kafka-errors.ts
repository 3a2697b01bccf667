// Kafka errors as the transactional writer classifies them: the protocol error names inside kafkajs's wrappers, a
// size refusal (final for the transaction: the writer splits around it) and a fenced or unauthorized producer
// (final for the process: another replica takes over).

/** Every error object inside an error and what kafkajs wraps in it (causes, retries, aggregates), outermost first. */
export function errorsWithin(error: unknown): Array<{ type?: unknown; name?: unknown }> {
  const found: Array<{ type?: unknown; name?: unknown }> = [];
  const seen = new Set<unknown>();
  const visit = (value: unknown, depth: number): void => {
    if (!value || typeof value !== 'object' || seen.has(value) || depth > 5) return;
    seen.add(value);
    const e = value as {
      type?: unknown;
      name?: unknown;
      cause?: unknown;
      errors?: unknown;
      originalError?: unknown;
    };
    found.push(e);
    visit(e.cause, depth + 1);
    visit(e.originalError, depth + 1);
    if (Array.isArray(e.errors)) for (const inner of e.errors) visit(inner, depth + 1);
  };
  visit(error, 0);
  return found;
}

/** The Kafka error names in an error and its causes (kafkajs wraps protocol errors): each one's type, then name. */
export function kafkaErrorNames(error: unknown): string[] {
  return errorsWithin(error).flatMap((e) =>
    [e.type, e.name].filter((n): n is string => typeof n === 'string'),
  );
}

/** The broker refused records for their size: retrying the same transaction can never succeed. */
export function isRecordSizeError(error: unknown): boolean {
  return kafkaErrorNames(error).some(
    (name) => name === 'MESSAGE_TOO_LARGE' || name === 'RECORD_LIST_TOO_LARGE',
  );
}

/**
 * A failed transaction's error: its first protocol error name (else kafkajs's own), and whether it is final for the
 * producer. Another live process took our transactional id: final, as a new producer would fence that process in
 * turn. So is a refusal of the principal (a missing ACL: README, "Kafka ACLs"): retrying it two minutes hides it.
 */
export function transactionFailureOf(error: unknown): { name: string; fenced: boolean } {
  const names = kafkaErrorNames(error);
  return {
    name: names.find((n) => !n.startsWith('KafkaJS')) ?? names[0] ?? '',
    fenced: names.some((n) => /FENCED|INVALID_PRODUCER_EPOCH|_AUTHORIZATION_FAILED/.test(n)),
  };
}
