import { useOwnRedis } from './redis-fixture.ts';
import { describeQuoteCooldown } from './suites/quote-cooldown.suite.ts';

describeQuoteCooldown(useOwnRedis());
