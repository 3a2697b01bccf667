import { useOwnRedis } from './redis-fixture.ts';
import { describeReferenceClaims } from './suites/reference-claims.suite.ts';

describeReferenceClaims(useOwnRedis());
