import t from 'tap'
import { runOnNakama } from './fake-nakama/suite.js'

// The session, token and display-name API tests of the earlier issues, again on the Nakama
// backend (test/fake-nakama/suite.ts says what is left out and why).
t.test('the session, token and display-name API tests pass on the Nakama backend', (t) =>
  runOnNakama(t, ['auth-tokens.test.js', 'username.test.js', 'session.test.js']))
