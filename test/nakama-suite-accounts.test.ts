import t from 'tap'
import { runOnNakama } from './fake-nakama/suite.js'

// The sign-in API tests of the earlier issues, again on the Nakama backend
// (test/fake-nakama/suite.ts says what is left out and why).
t.test('the sign-in API tests pass on the Nakama backend', (t) => runOnNakama(t, ['auth.test.js', 'auth-limit.test.js']))
