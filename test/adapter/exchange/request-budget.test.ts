// The request budget against a real Redis (its own redis-server, so the fallback can be tested by killing it), plus
// the contract suite that every RequestBudget implementation passes (test/adapter/redis/suites/request-budget.suite.ts,
// which the Sentinel and Cluster suites of test/integration/ run too).
import { LocalRequestBudget } from '../../../src/exchange/request-budget.ts';
import { useOwnRedis } from '../redis/redis-fixture.ts';
import {
  describeBudgetContract,
  describeRedisRequestBudget,
  small,
} from '../redis/suites/request-budget.suite.ts';

describeBudgetContract('LocalRequestBudget', () => Promise.resolve(new LocalRequestBudget(small)));
describeRedisRequestBudget(useOwnRedis());
