// The states an order can be stored in and resumed from (the machine's `restoring` router is generated from this
// list; order-persistence.ts stores the key). A key names a state as "parent.child"; an open order is just "open".

/** Every state an order can be stored in, as a resume key (the open order's two regions resume from context). */
export const resumableStates = [
  'checkingAddress.calling',
  'checkingAddress.waiting',
  'preScreening.calling',
  'preScreening.waiting',
  'quoting.acquiringSlot',
  'quoting.coolingDown',
  'quoting.requesting',
  'quoting.waiting',
  'creating.posting',
  'creating.verifying',
  'creating.waiting',
  'creating.parked',
  'creating.adopting',
  'open',
  'completed',
  'refunded',
  'canceled',
  'failed',
] as const;
export type ResumeKey = (typeof resumableStates)[number];

export function isResumeKey(key: string): key is ResumeKey {
  return (resumableStates as readonly string[]).includes(key);
}
