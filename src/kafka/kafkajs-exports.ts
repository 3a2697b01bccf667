// The kafkajs names code outside src/kafka/ still uses (the worker's hint producer and lag admin, the inspector's
// reader), re-exported here so that kafkajs itself is imported only in src/kafka/ (an ESLint rule enforces it).
// Narrowing these to our own small interfaces is the next step; until then this file lists what leaks.
export { Partitioners } from 'kafkajs';
export type { Admin, Consumer, IHeaders, Kafka, Producer } from 'kafkajs';
