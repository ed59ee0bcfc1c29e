// A game client's first hour with hiscore, typed from the service's own
// OpenAPI document (`npm run generate` writes src/schema.d.ts from
// /api/openapi.json; openapi-fetch checks every path, parameter and body
// against it at compile time). Run: npm ci && npm run build && npm run flow -- http://127.0.0.1:8080
// It registers three players, posts with an Idempotency-Key (and sees the
// replay), rides out a 429 by its Retry-After, reads the board and follows
// the cursor to the end. Exits non-zero at the first thing that is not as
// the contract says.
import createClient from "openapi-fetch";
import type { paths } from "./schema.js";

const base = process.argv[2] ?? "http://127.0.0.1:8080";
const client = createClient<paths>({ baseUrl: base });

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

let retries = 0;

/** Sends again after `Retry-After` while the server answers 429 or 503 (the contract's "come back later"). */
async function withRetry<T extends { response: Response }>(send: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const result = await send();
    const status = result.response.status;
    if ((status === 429 || status === 503) && attempt < 10) {
      retries += 1;
      const seconds = Number(result.response.headers.get("Retry-After") ?? "1");
      await new Promise((resolve) => setTimeout(resolve, Math.min(seconds, 5) * 1000));
      continue;
    }
    return result;
  }
}

const run = Date.now().toString(36);
const players: { token: string; id: number }[] = [];
for (let i = 0; i < 3; i++) {
  const { data, error } = await withRetry(() =>
    client.POST("/api/users", { body: { login_name: `ts_${run}_${i}`, password: "correct horse battery" } }),
  );
  check(data, `register: ${JSON.stringify(error)}`);
  players.push({ token: data.token, id: data.user.id });
}
const auth = (token: string) => ({ Authorization: `Bearer ${token}` });

// A post with an Idempotency-Key, and the same post again (a retry after a lost answer).
const key = `flow-${run}`;
const post = (token: string, score: number, idempotencyKey?: string) =>
  withRetry(() =>
    client.POST("/api/scores", {
      body: { score },
      params: { header: idempotencyKey ? { "Idempotency-Key": idempotencyKey } : {} },
      headers: auth(token),
    }),
  );
const [alice, bob, carol] = players.map((player) => player.token);
check(alice && bob && carol, "three players");
const first = await post(alice, 500, key);
check(first.response.status === 201 && first.data, `first post: ${first.response.status}`);
const replay = await post(alice, 500, key);
check(replay.response.status === 200, `replay: ${replay.response.status}`);
check(replay.response.headers.get("Idempotent-Replayed") === "true", "the replay says so");
check(JSON.stringify(replay.data) === JSON.stringify(first.data), "the replay is the first answer");

// Two posts of one player at once: the server (RATE_POSTS_PER_PLAYER=1 in
// CI) answers the second 429 with Retry-After, and the client waits and sends it again.
const before = retries;
await Promise.all([post(bob, 300), post(bob, 700)]);
check(retries > before, "a 429 was met and ridden out");
await post(carol, 700);

// The board, one entry per page, by cursor to the end: competition ranks
// (ties share a rank, the next rank skips), nobody twice.
const walked: { id: number; rank: number; score: number }[] = [];
let cursor: string | undefined;
for (;;) {
  const { data, error } = await client.GET("/api/rankings/{board}", {
    params: { path: { board: "best" }, query: cursor ? { limit: 1, cursor } : { limit: 1 } },
  });
  check(data, `page: ${JSON.stringify(error)}`);
  for (const entry of data.entries) walked.push({ id: entry.user.id, rank: entry.rank, score: entry.score });
  if (!data.next_cursor) break;
  cursor = data.next_cursor;
}
walked.forEach((entry, i) => {
  const firstWithScore = walked.findIndex((other) => other.score === entry.score);
  check(entry.rank === firstWithScore + 1, `rank ${entry.rank} at position ${i + 1} (score ${entry.score})`);
});
check(new Set(walked.map((entry) => entry.id)).size === walked.length, "nobody twice");
const rankOf = (index: number) => walked.find((entry) => entry.id === players[index]?.id)?.rank;
const [aliceRank, bobRank, carolRank] = [rankOf(0), rankOf(1), rankOf(2)];
check(aliceRank && bobRank && carolRank, "all three are on the board");
check(bobRank === carolRank && aliceRank > bobRank, `ranks: alice ${aliceRank}, bob ${bobRank}, carol ${carolRank}`);
console.log(`flow passed: ${walked.length} entries walked, ${retries} retries after 429`);
