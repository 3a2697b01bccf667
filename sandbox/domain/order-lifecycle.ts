// The exchange's order statuses with their real codes (hossamelneily/nexchange orders/models/base.py) and the
// allowed moves: INITIAL -> UNCONFIRMED PAYMENT -> PAID -> PRE-RELEASE -> RELEASED -> COMPLETED; INITIAL or
// UNCONFIRMED PAYMENT -> CANCELED when the payment window lapses; PAID or PRE-RELEASE -> REFUNDED.
// A status never goes back: every path computed here only moves forward.

export const statusCodes = {
  CANCELED: 0,
  REFUNDED: 8,
  INITIAL: 11,
  'UNCONFIRMED PAYMENT': 12,
  PAID: 13,
  'PRE-RELEASE': 14,
  RELEASED: 15,
  COMPLETED: 16,
} as const;

export type OrderStatus = keyof typeof statusCodes;

export const forwardPath: readonly OrderStatus[] = [
  'INITIAL',
  'UNCONFIRMED PAYMENT',
  'PAID',
  'PRE-RELEASE',
  'RELEASED',
  'COMPLETED',
];

export const terminalStatuses: readonly OrderStatus[] = ['COMPLETED', 'REFUNDED', 'CANCELED'];
export const cancelableStatuses: readonly OrderStatus[] = ['INITIAL', 'UNCONFIRMED PAYMENT'];
export const refundableStatuses: readonly OrderStatus[] = ['PAID', 'PRE-RELEASE'];

/** Admin vocabulary for advancing an order: an event name or a status name. */
export const advanceTargets = {
  deposit_seen: 'UNCONFIRMED PAYMENT',
  confirmed: 'PAID',
  pre_release: 'PRE-RELEASE',
  released: 'RELEASED',
  completed: 'COMPLETED',
  refunded: 'REFUNDED',
  canceled: 'CANCELED',
} as const satisfies Record<string, OrderStatus>;
export type AdvanceTarget = keyof typeof advanceTargets | OrderStatus;

export function statusByCode(code: number): OrderStatus | undefined {
  return (Object.keys(statusCodes) as OrderStatus[]).find((status) => statusCodes[status] === code);
}

export function resolveAdvanceTarget(target: string): OrderStatus | undefined {
  if (target in advanceTargets) return advanceTargets[target as keyof typeof advanceTargets];
  const upper = target.toUpperCase().replace(/_/g, ' ');
  return (Object.keys(statusCodes) as OrderStatus[]).find(
    (s) => s === upper || s.replace('-', ' ') === upper,
  );
}

/**
 * The statuses to pass through, in order, to get from `from` to `to` (one webhook each); [] when already
 * there; undefined when the move would go back or leave a terminal status.
 */
export function pathBetween(from: OrderStatus, to: OrderStatus): OrderStatus[] | undefined {
  if (from === to) return [];
  if (terminalStatuses.includes(from)) return undefined;
  const fromIndex = forwardPath.indexOf(from);
  if (to === 'CANCELED') return cancelableStatuses.includes(from) ? ['CANCELED'] : undefined;
  if (to === 'REFUNDED') {
    if (refundableStatuses.includes(from)) return ['REFUNDED'];
    if (cancelableStatuses.includes(from))
      return [...forwardPath.slice(fromIndex + 1, forwardPath.indexOf('PAID') + 1), 'REFUNDED'];
    return undefined;
  }
  const toIndex = forwardPath.indexOf(to);
  return toIndex > fromIndex ? forwardPath.slice(fromIndex + 1, toIndex + 1) : undefined;
}
