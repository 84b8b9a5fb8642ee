// Playfield's Nakama runtime module (README "Scaling out with Nakama").
//
// Nakama's JavaScript runtime (goja, ES5.1) loads ONE script: no import/export/require, a top-level
// InitModule, and every RPC registered by the identifier of a top-level named function (Nakama
// finds them through the AST; an inline function is refused at start). The platform calls these
// RPCs server-to-server with the runtime HTTP key (POST /v2/rpc/<id>?unwrap), so they run without
// a user: owner ids travel in the payload. Payloads and answers are JSON objects; expected
// outcomes (a taken name, an empty bucket) are answers with `error`, never exceptions.
//
// Nakama also runs an RPC for any user who calls it with their own session (Bearer), and the
// platform hands every user such a session (GET /api/auth/backend-token). These RPCs act for any
// owner named in the payload, so each one first refuses a caller with a user (serverOnly).
//
// Every storage object the module writes is owned by the system user, keyed by the user it is
// about. A session can create an object in its own namespace, in any collection, when none is
// there yet (PUT /v2/storage; the permissions the module would set do not stop a first write): a
// roles object there would make its owner an admin. So nothing in a user's namespace is trusted.

var SYSTEM_USER = '00000000-0000-0000-0000-000000000000';
var RENAME_BUCKETS = 'playfield_rename_buckets';
var WINDOWS = 'playfield_event_windows';
var ROLES = 'playfield_roles';
var REVOKED = 'playfield_revoked';
var LAUNCHES = 'playfield_launches';
var UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
// Storage-version conflicts are retried this many times before the RPC gives up (500).
var MAX_ATTEMPTS = 50;
var MAX_SCORE = 9007199254740991;
// A board whose reset schedule cannot be compared this second (sameSchedule): neither the same nor differing.
var UNSURE = 'unsure';

function InitModule(ctx, logger, nk, initializer) {
  initializer.registerRpc('playfield_sync_leaderboards', rpcSyncLeaderboards);
  initializer.registerRpc('playfield_write_record', rpcWriteRecord);
  initializer.registerRpc('playfield_list_records', rpcListRecords);
  initializer.registerRpc('playfield_get_account', rpcGetAccount);
  initializer.registerRpc('playfield_rename', rpcRename);
  initializer.registerRpc('playfield_event_window', rpcEventWindow);
  initializer.registerRpc('playfield_set_role', rpcSetRole);
  initializer.registerRpc('playfield_list_privileged', rpcListPrivileged);
  initializer.registerRpc('playfield_record_launch', rpcRecordLaunch);
  initializer.registerRpc('playfield_revoke_session', rpcRevokeSession);
  initializer.registerRpc('playfield_session_revoked', rpcSessionRevoked);
  initializer.registerBeforeUpdateAccount(beforeUpdateAccount);
  migrateRoles(nk, logger);
  logger.info('playfield module loaded');
}

// Roles used to be kept in each user's namespace. Those granted there (the system-owned index
// lists them) move to the system user's; any other object in a user's namespace is ignored.
function migrateRoles(nk, logger) {
  var index = readObject(nk, ROLES, 'index', SYSTEM_USER);
  var ids = index && index.value.userIds ? index.value.userIds : [];
  if (!ids.length) return;
  // One read at every start for all of them; once moved, it finds nothing.
  var legacy = nk.storageRead(ids.map(function (id) { return { collection: ROLES, key: 'roles', userId: id }; })) || [];
  for (var i = 0; i < legacy.length; i++) {
    var id = legacy[i].userId;
    if (!readObject(nk, ROLES, id, SYSTEM_USER)) {
      try {
        writeObject(nk, ROLES, id, SYSTEM_USER, { roles: legacy[i].value.roles || [] }, null);
      } catch (e) {
        if (!isVersionConflict(e)) throw e;
      }
    }
    nk.storageDelete([{ collection: ROLES, key: 'roles', userId: id }]);
    logger.info('playfield: roles of ' + id + ' moved to system-owned storage');
  }
}

// ---- pure helpers -------------------------------------------------------------------------------

// ctx.userId is set only when a user's session token called (nakama-api.md §1.9); with the HTTP
// key it is empty. PermissionDenied (7) is HTTP 403.
function serverOnly(ctx) {
  if (ctx && ctx.userId) throw { message: 'playfield RPCs are server-to-server: call them with the runtime HTTP key', code: 7 };
}

// The token bucket of lib/limiter.ts, rule for rule: a missing bucket is full; refill is linear.
function bucketRefill(bucket, rule, now) {
  if (!bucket) return { tokens: rule.capacity, updatedAt: now };
  var elapsed = Math.max(0, now - bucket.updatedAt);
  var tokens = Math.min(rule.capacity, bucket.tokens + (elapsed * rule.refill) / rule.intervalMs);
  return { tokens: tokens, updatedAt: Math.max(now, bucket.updatedAt) };
}

function bucketTake(bucket, rule, now) {
  var current = bucketRefill(bucket, rule, now);
  if (current.tokens >= 1) {
    return { bucket: { tokens: current.tokens - 1, updatedAt: current.updatedAt }, allowed: true, waitMs: 0 };
  }
  var waitMs = Math.ceil(((1 - current.tokens) * rule.intervalMs) / rule.refill);
  return { bucket: current, allowed: false, waitMs: waitMs };
}

function parsePayload(payload) {
  var value = payload ? JSON.parse(payload) : {};
  if (value === null || typeof value !== 'object') throw { message: 'payload must be a JSON object', code: 3 };
  return value;
}

function errorText(e) {
  if (e && typeof e === 'object' && e.message !== undefined) return String(e.message);
  return String(e);
}

function isVersionConflict(e) {
  return /version check failed|rejected/i.test(errorText(e));
}

// Some Nakama versions hand the username over as a protobuf wrapper ({value}) or null.
function usernameOf(r, fallback) {
  if (typeof r.username === 'string') return r.username;
  if (r.username && typeof r.username.value === 'string') return r.username.value;
  return fallback || '';
}

// `name`, when given, is the owner's name now, served instead of the stored one.
function toRecord(r, name) {
  return {
    leaderboard_id: r.leaderboardId,
    owner_id: r.ownerId,
    username: typeof name === 'string' ? name : usernameOf(r),
    score: Number(r.score || 0),
    subscore: Number(r.subscore || 0),
    rank: Number(r.rank || 0)
  };
}

// ---- storage helpers ----------------------------------------------------------------------------

function readObject(nk, collection, key, userId) {
  var found = nk.storageRead([{ collection: collection, key: key, userId: userId }]);
  return found && found.length ? found[0] : null;
}

// Write `value` only if the object is still at `previous`'s version ('*': only if still absent).
// Permissions 0/0: clients can neither read nor write these objects; only the server can.
function writeObject(nk, collection, key, userId, value, previous) {
  nk.storageWrite([{
    collection: collection, key: key, userId: userId, value: value,
    version: previous ? previous.version : '*', permissionRead: 0, permissionWrite: 0
  }]);
}

function rolesOf(nk, userId) {
  var object = readObject(nk, ROLES, userId, SYSTEM_USER);
  return object && object.value && object.value.roles ? object.value.roles : [];
}

function accountOf(nk, user) {
  var id = user.userId || user.id;
  return { id: id, username: user.username, roles: rolesOf(nk, id) };
}

function userById(nk, userId) {
  if (!UUID.test(String(userId))) return null;
  var users = nk.usersGetId([userId]);
  return users && users.length ? users[0] : null;
}

// Take one token, retrying when another request wrote the bucket between our read and write.
function takeStored(nk, collection, key, rule, now) {
  for (var attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    var object = readObject(nk, collection, key, SYSTEM_USER);
    var result = bucketTake(object ? object.value : undefined, rule, now);
    if (!result.allowed) return result;
    try {
      writeObject(nk, collection, key, SYSTEM_USER, result.bucket, object);
      return result;
    } catch (e) {
      if (!isVersionConflict(e)) throw e;
    }
  }
  throw { message: 'bucket ' + key + ' stayed contended', code: 10 };
}

// Give back the token taken for a change that did not happen.
function refundStored(nk, collection, key, rule) {
  for (var attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    var object = readObject(nk, collection, key, SYSTEM_USER);
    if (!object) return;
    var bucket = { tokens: Math.min(rule.capacity, object.value.tokens + 1), updatedAt: object.value.updatedAt };
    try {
      writeObject(nk, collection, key, SYSTEM_USER, bucket, object);
      return;
    } catch (e) {
      if (!isVersionConflict(e)) throw e;
    }
  }
}

// ---- RPCs ---------------------------------------------------------------------------------------

// Create every catalogue leaderboard; creation is idempotent and never changes an existing board,
// so boards whose stored configuration differs are reported for the platform to log.
function rpcSyncLeaderboards(ctx, logger, nk, payload) {
  serverOnly(ctx);
  var boards = parsePayload(payload).boards || [];
  var existing = {};
  var ids = boards.map(function (b) { return b.id; });
  // Older runtimes have no leaderboardsGetId: creation is idempotent, so create them all then.
  var found = ids.length && typeof nk.leaderboardsGetId === 'function' ? nk.leaderboardsGetId(ids) : [];
  for (var i = 0; i < found.length; i++) existing[found[i].id] = found[i];
  var created = [];
  var differing = [];
  var unchecked = [];
  for (var j = 0; j < boards.length; j++) {
    var b = boards[j];
    var old = existing[b.id];
    if (old) {
      var same = sameBoard(old, b);
      if (same === UNSURE) unchecked.push(b.id);
      else if (!same) differing.push(b.id);
      continue;
    }
    nk.leaderboardCreate(b.id, b.authoritative === true, b.sortOrder, b.operator, b.resetSchedule || null,
      { playfield: true }, true);
    created.push(b.id);
  }
  return JSON.stringify({ created: created, differing: differing, unchecked: unchecked });
}

// Nakama versions report the operator as a name ('increment') or a stored number (incr 2).
function operatorOf(board) {
  var ops = { 0: 'best', 1: 'set', 2: 'incr', 3: 'decr', increment: 'incr', decrement: 'decr' };
  return ops[board.operator] !== undefined ? ops[board.operator] : board.operator;
}

// Nakama's leaderboard object (leaderboardToJsObject) carries no reset schedule, only the current
// period's bounds: prevReset and nextReset, the schedule's last and next fire times (Unix seconds),
// left out (or 0 on older runtimes) when the board has none. The platform sends `resets`, its
// schedule's consecutive fire times from shortly before now (null without a schedule): the stored
// schedule is taken as the same when its bounds are two neighbours there.
// cronexpr works in whole seconds: within a fire's own second its Last and Next both pass over that
// fire (Date.now() is the clock they read), and the bounds are then the fires either side of it.
// Whether the stored schedule fires at that second too cannot be told from them: UNSURE, which the
// next sync (a start, a reload) settles.
function sameSchedule(old, resets) {
  var prev = Number(old.prevReset || 0);
  var next = Number(old.nextReset || 0);
  if (!resets || !resets.length) return next === 0;
  var second = Math.floor(Date.now() / 1000);
  for (var i = 0; i + 1 < resets.length; i++) {
    if (resets[i + 1] !== next) continue;
    if (prev === 0 || resets[i] === prev) return true;
    if (i > 0 && resets[i] === second && resets[i - 1] === prev) return UNSURE;
  }
  return false;
}

// Sort order comes as a name or as the stored number (asc 0, desc 1); compare what is known.
// true, false, or UNSURE when all but the schedule agree and it cannot be told this second.
function sameBoard(old, b) {
  var sort = old.sortOrder;
  if (sort === 0 || sort === 'asc' || sort === 'ascending') sort = 'asc';
  else if (sort === 1 || sort === 'desc' || sort === 'descending') sort = 'desc';
  var op = operatorOf(old);
  return sort === b.sortOrder && op === b.operator && Boolean(old.authoritative) === Boolean(b.authoritative) &&
    (b.resets === undefined || sameSchedule(old, b.resets));
}

// Server-side write: runs with the nil caller, so authoritative boards accept it.
function rpcWriteRecord(ctx, logger, nk, payload) {
  serverOnly(ctx);
  var p = parsePayload(payload);
  var metadata = p.metadata === undefined || p.metadata === null ? undefined : JSON.parse(p.metadata);
  var record;
  try {
    // The platform passes the board's operator (from its catalogue) for the overflow check.
    var overflow = p.operator === 'incr' ? overflowOf(nk, p) : null;
    if (overflow) return JSON.stringify({ error: 'SCORE_OVERFLOW', field: overflow });
    // The account's name now, not the one the caller's session remembered: another session may
    // have renamed the account since, and someone else may hold the old name. A write that changes
    // nothing keeps the record's stored name, so the answer carries the name now as well.
    var owners = nk.usersGetId([p.ownerId]);
    var name = owners.length && owners[0].username ? owners[0].username : '';
    record = nk.leaderboardRecordWrite(p.leaderboardId, p.ownerId, name || p.username, p.score, p.subscore || 0, metadata);
  } catch (e) {
    if (/not found/i.test(errorText(e))) return JSON.stringify({ error: 'LEADERBOARD_NOT_FOUND' });
    throw e;
  }
  var out = toRecord(record, name || usernameOf(record, p.username));
  // Some runtime versions leave the rank out of the written record: read it from the rank cache.
  if (!out.rank) {
    var own = nk.leaderboardRecordsList(p.leaderboardId, [p.ownerId], 1, '', 0).ownerRecords || [];
    if (own.length) out.rank = Number(own[0].rank || 0);
  }
  return JSON.stringify({ record: out });
}

// JS numbers are exact to 2^53-1 (CONTRACT §3's bound); an increment past it would be stored rounded.
// Which of the stored values an increment would carry past 2^53-1: 'score', 'subscore' or null.
function overflowOf(nk, p) {
  var own = nk.leaderboardRecordsList(p.leaderboardId, [p.ownerId], 1, '', 0).ownerRecords || [];
  if (!own.length) return null;
  if (Number(own[0].score || 0) + p.score > MAX_SCORE) return 'score';
  if (Number(own[0].subscore || 0) + (p.subscore || 0) > MAX_SCORE) return 'subscore';
  return null;
}

// A page in rank order plus the caller's own record; listing through the HTTP key lets anonymous
// readers see public boards (GET /v2/leaderboard needs a user's session).
function rpcListRecords(ctx, logger, nk, payload) {
  serverOnly(ctx);
  var p = parsePayload(payload);
  var owners = p.ownerId ? [p.ownerId] : [];
  var list;
  try {
    list = nk.leaderboardRecordsList(p.leaderboardId, owners, p.limit, p.cursor || '', 0);
  } catch (e) {
    var text = errorText(e);
    if (/not found/i.test(text)) return JSON.stringify({ error: 'LEADERBOARD_NOT_FOUND' });
    if (/cursor/i.test(text)) return JSON.stringify({ error: 'INVALID_CURSOR' });
    throw e;
  }
  var records = list.records || [];
  var ranks = p.cursor ? liveRanks(nk, p.leaderboardId, records) : null;
  var own = (list.ownerRecords || []).filter(function (r) { return r.ownerId === p.ownerId && r.rank; });
  var names = currentNames(nk, records.concat(own));
  return JSON.stringify({
    records: records.map(function (r, i) {
      var out = toRecord(r, names[r.ownerId]);
      if (ranks) out.rank = ranks[i];
      return out;
    }),
    nextCursor: list.nextCursor || null,
    ownRecord: own.length ? toRecord(own[0], names[own[0].ownerId]) : null
  });
}

// Nakama counts a cursor page's ranks on from the rank stored in the cursor (nakama-api.md §1.7):
// stale once players move between pages, and forged by anyone who edits the unsigned blob. The
// page is consecutive in the live order, so its first record's rank from the rank cache (an
// owner-records read, of the same period) gives them all: one more read per cursor page, whatever
// its length. 0 (unranked) when the cache has none: the board's ranks are off, or the record went.
function liveRanks(nk, leaderboardId, records) {
  if (!records.length) return [];
  var first = records[0];
  var cached = nk.leaderboardRecordsList(leaderboardId, [first.ownerId], 1, '', Number(first.expiryTime || 0)).ownerRecords || [];
  var start = cached.length && cached[0].ownerId === first.ownerId ? Number(cached[0].rank || 0) : 0;
  return records.map(function (r, i) { return start ? start + i : 0; });
}

// Records keep the username they were last written with (nakama-api.md §3.1), which a rename
// leaves behind and someone else may take. The names now, by owner id: one users read per page
// (nk.usersGetId leaves out users that no longer exist; their records keep the stored name).
function currentNames(nk, records) {
  var ids = [];
  for (var i = 0; i < records.length; i++) {
    if (ids.indexOf(records[i].ownerId) < 0) ids.push(records[i].ownerId);
  }
  var names = {};
  if (!ids.length) return names;
  var users = nk.usersGetId(ids) || [];
  for (var j = 0; j < users.length; j++) {
    if (typeof users[j].username === 'string') names[users[j].userId || users[j].id] = users[j].username;
  }
  return names;
}

function rpcGetAccount(ctx, logger, nk, payload) {
  serverOnly(ctx);
  var user = userById(nk, parsePayload(payload).userId);
  return JSON.stringify({ account: user ? accountOf(nk, user) : null });
}

// The rename bucket is the lock: take a token with a conditional write, rename, and give the token
// back when the rename is refused, so only an accepted rename spends (CONTRACT §3).
function rpcRename(ctx, logger, nk, payload) {
  serverOnly(ctx);
  var p = parsePayload(payload);
  var user = userById(nk, p.userId);
  if (!user) return JSON.stringify({ error: 'NOT_FOUND' });
  // The current name again is no change: nothing to spend (a change of case is a change).
  if (user.username === p.username) return JSON.stringify({ account: accountOf(nk, user) });
  var taken = nk.usersGetUsername([p.username]);
  if (taken && taken.length && (taken[0].userId || taken[0].id) !== p.userId) {
    return JSON.stringify({ error: 'USERNAME_TAKEN' });
  }
  var result = takeStored(nk, RENAME_BUCKETS, p.userId, p.rule, p.now);
  if (!result.allowed) return JSON.stringify({ error: 'RATE_LIMITED', waitMs: result.waitMs });
  try {
    nk.accountUpdateId(p.userId, p.username, null, null, null, null, null, null);
  } catch (e) {
    refundStored(nk, RENAME_BUCKETS, p.userId, p.rule);
    if (/already in use/i.test(errorText(e))) return JSON.stringify({ error: 'USERNAME_TAKEN' });
    throw e;
  }
  return JSON.stringify({ account: { id: p.userId, username: p.username, roles: rolesOf(nk, p.userId) } });
}

// The times of a named window's events younger than windowMs (the platform's failed sign-ins per
// address), owned by the system user; with record, `now` is added (keeping the latest `keep`)
// with a storage-version check, so instances adding at once lose none. Times more than windowMs
// ahead of `now` are dropped, as lib/backend/embedded/event-windows.ts drops them (a clock stepped back).
function rpcEventWindow(ctx, logger, nk, payload) {
  serverOnly(ctx);
  var p = parsePayload(payload);
  for (var attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    var object = readObject(nk, WINDOWS, p.key, SYSTEM_USER);
    var times = (object && object.value.times ? object.value.times : []).filter(function (t) { return t > p.now - p.windowMs && t <= p.now + p.windowMs; });
    if (!p.record) {
      // A window with nothing left in it goes, so addresses that stopped failing leave nothing behind.
      if (object && !times.length) {
        try {
          nk.storageDelete([{ collection: WINDOWS, key: p.key, userId: SYSTEM_USER, version: object.version }]);
        } catch (e) {
          if (!isVersionConflict(e)) throw e;
        }
      }
      return JSON.stringify({ times: times });
    }
    times.push(p.now);
    times.sort(function (a, b) { return a - b; });
    if (times.length > p.keep) times = times.slice(times.length - p.keep);
    try {
      writeObject(nk, WINDOWS, p.key, SYSTEM_USER, { times: times }, object);
      return JSON.stringify({ times: times });
    } catch (e) {
      if (!isVersionConflict(e)) throw e;
    }
  }
  throw { message: 'window ' + p.key + ' stayed contended', code: 10 };
}

// Grant or revoke a role on the account with exactly this username (Nakama names are case-exact).
// The user's roles object and the index of privileged users, both system-owned, are written in one
// storage transaction with version checks, so concurrent grants cannot lose each other.
function rpcSetRole(ctx, logger, nk, payload) {
  serverOnly(ctx);
  var p = parsePayload(payload);
  var users = nk.usersGetUsername([p.username]);
  if (!users || !users.length) return JSON.stringify({ error: 'NOT_FOUND' });
  var id = users[0].userId || users[0].id;
  for (var attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    var object = readObject(nk, ROLES, id, SYSTEM_USER);
    var index = readObject(nk, ROLES, 'index', SYSTEM_USER);
    var roles = (object && object.value.roles ? object.value.roles : []).filter(function (r) { return r !== p.role; });
    if (p.grant) roles.push(p.role);
    roles.sort();
    var ids = (index && index.value.userIds ? index.value.userIds : []).filter(function (u) { return u !== id; });
    if (roles.length) ids.push(id);
    try {
      nk.storageWrite([
        { collection: ROLES, key: id, userId: SYSTEM_USER, value: { roles: roles }, version: object ? object.version : '*', permissionRead: 0, permissionWrite: 0 },
        { collection: ROLES, key: 'index', userId: SYSTEM_USER, value: { userIds: ids }, version: index ? index.version : '*', permissionRead: 0, permissionWrite: 0 }
      ]);
      return JSON.stringify({ account: { id: id, username: users[0].username, roles: roles } });
    } catch (e) {
      if (!isVersionConflict(e)) throw e;
    }
  }
  throw { message: 'roles of ' + p.username + ' stayed contended', code: 10 };
}

function rpcListPrivileged(ctx, logger, nk, payload) {
  serverOnly(ctx);
  var index = readObject(nk, ROLES, 'index', SYSTEM_USER);
  var ids = index && index.value.userIds ? index.value.userIds : [];
  if (!ids.length) return JSON.stringify({ accounts: [] });
  var rolesById = {};
  var objects = nk.storageRead(ids.map(function (id) { return { collection: ROLES, key: id, userId: SYSTEM_USER }; }));
  for (var i = 0; i < objects.length; i++) rolesById[objects[i].key] = objects[i].value.roles || [];
  var accounts = nk.usersGetId(ids).map(function (u) {
    var id = u.userId || u.id;
    return { id: id, username: u.username, roles: rolesById[id] || [] };
  }).filter(function (a) { return a.roles.length > 0; });
  accounts.sort(function (a, b) { return a.username < b.username ? -1 : a.username > b.username ? 1 : 0; });
  return JSON.stringify({ accounts: accounts });
}

function rpcRecordLaunch(ctx, logger, nk, payload) {
  serverOnly(ctx);
  var p = parsePayload(payload);
  nk.storageWrite([{
    collection: LAUNCHES, key: p.sessionId, userId: SYSTEM_USER,
    value: { userId: p.userId, gameId: p.gameId, time: p.time }, permissionRead: 0, permissionWrite: 0
  }]);
  // Said outright: the platform takes nothing else (an empty answer could come from anything) as stored.
  return JSON.stringify({ recorded: true });
}

// Logout kept in storage: Nakama's own logout blacklist lives in memory, per node, and is lost on
// restart; this record holds on every node and across restarts. Nakama's logout is applied too.
function rpcRevokeSession(ctx, logger, nk, payload) {
  serverOnly(ctx);
  var p = parsePayload(payload);
  storeRevocation(nk, p);
  // nk.sessionLogout takes an absent token only as undefined (null throws), fails as a whole when
  // a token it is given does not verify (an expired session token does not), and with neither
  // token ends every session of the user: so the refresh token always goes, the session token
  // only while it is valid, and a refusal is retried with the refresh token alone.
  var refreshToken = p.refreshToken ? String(p.refreshToken) : undefined;
  var token = p.token ? String(p.token) : undefined;
  if (typeof nk.sessionLogout === 'function' && refreshToken !== undefined) {
    try {
      nk.sessionLogout(p.userId, token, refreshToken);
    } catch (e) {
      try {
        if (token === undefined) throw e;
        nk.sessionLogout(p.userId, undefined, refreshToken);
      } catch (e2) {
        logger.warn('sessionLogout failed: ' + errorText(e2));
      }
    }
  }
  // The storage record is what ends the session; said outright, as for a launch.
  return JSON.stringify({ revoked: true });
}

function rpcSessionRevoked(ctx, logger, nk, payload) {
  serverOnly(ctx);
  var p = parsePayload(payload);
  if (!UUID.test(String(p.userId))) return JSON.stringify({ revoked: true });
  var record = readObject(nk, REVOKED, String(p.tid), SYSTEM_USER);
  // A record in the user's own namespace is an older module's (or the user's own doing, which can
  // only end their own session): still a revocation.
  var revoked = (record !== null && record.value.userId === p.userId) || readObject(nk, REVOKED, String(p.tid), p.userId) !== null;
  if (revoked) return JSON.stringify({ revoked: true });
  // The sessions of an account deleted since (in the console) are over too: its scores would go on
  // being written under a name someone else may register now.
  if (userById(nk, p.userId) === null) return JSON.stringify({ revoked: true });
  // And those of a banned one (accountGetId gives disableTime, unix seconds, only while banned):
  // the module writes scores as the server, past the ban that ended the account's Nakama tokens.
  // Stored as a logout is, so lifting the ban does not bring a session back, as in Nakama.
  if (Number(nk.accountGetId(p.userId).disableTime || 0) > 0) {
    storeRevocation(nk, p);
    return JSON.stringify({ revoked: true });
  }
  return JSON.stringify({ revoked: false });
}

// The revocation of session `tid`: system-owned, naming its user; overwriting one is harmless.
function storeRevocation(nk, p) {
  nk.storageWrite([{
    collection: REVOKED, key: String(p.tid), userId: SYSTEM_USER,
    value: { userId: p.userId, exp: p.exp }, permissionRead: 0, permissionWrite: 0
  }]);
}

// ---- hooks --------------------------------------------------------------------------------------

// PUT /v2/account with the user's own session (the backend token front-ends get) would rename the
// account past the platform's username rule and its 3-an-hour limit (CONTRACT §3): refuse a change
// of username there; renames go through playfield_rename, whose nk.accountUpdateId runs no hooks.
// Nakama hands the request over with every field present (unset ones null) and continues with the
// returned request; a throw rejects the call with its code (7 PermissionDenied, HTTP 403).
function beforeUpdateAccount(ctx, logger, nk, data) {
  if (data && data.username !== null && data.username !== undefined) {
    var user = userById(nk, ctx.userId);
    if (!user || user.username !== data.username) {
      throw { message: 'usernames change only through the platform (PUT /api/user/username)', code: 7 };
    }
  }
  return data;
}
