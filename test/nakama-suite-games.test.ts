import t from 'tap'
import { runOnNakama, unlisted } from './fake-nakama/suite.js'

// The catalogue, launch and leaderboard API tests of the earlier issues, again on the Nakama
// backend (test/fake-nakama/suite.ts says what is left out and why).
const others = unlisted()
if (others.length) t.comment(`not run on Nakama (not listed in test/fake-nakama/suite.ts): ${others.join(', ')}`)
t.test('the catalogue, launch and leaderboard API tests pass on the Nakama backend', (t) =>
  runOnNakama(t, ['catalogue-api.test.js', 'catalogue-reload.test.js', 'launch.test.js', 'leaderboard-http.test.js']))
