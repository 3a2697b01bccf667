import { useOwnRedis } from './redis-fixture.ts';
import { describeLeaseKeeper } from './suites/lease-keeper.suite.ts';

describeLeaseKeeper(useOwnRedis());
