// meeple's page: plain JavaScript, no build step. The server owns the rules; this page draws the
// views it sends and turns clicks into moves by narrowing the legal moves' click paths.
'use strict';

const $ = (sel, root = document) => root.querySelector(sel);
const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
const PLAYER_COLOURS = ['#d1495b', '#2e86ab', '#edae49', '#3b9d5d', '#8e6c8a', '#555'];

async function api(method, path, body, token) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  if (token) init.headers['X-Meeple-Token'] = token;
  const res = await fetch(path, init);
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (_) { data = { error: text }; }
  if (!res.ok) {
    const err = new Error((data && data.error) || `${res.status} ${res.statusText}`);
    err.status = res.status;
    err.data = data;
    throw err;
  }
  return data;
}

// ---------------------------------------------------------------- seat tokens

// What this browser holds of a match: the owner's token (controls, invitations), the tokens of
// the seats it plays (its own, or several at one screen), and the invitations it sent for the
// others. An invitation's link carries its code after '#', which reaches neither the server's
// logs nor another site; the page that opens it claims the seat and gets a token only it holds.
// Tokens go in a header, never an address; what a finished game's page held is forgotten when
// its player leaves, and whatever nobody has opened for a month is dropped.
const KEY = 'meeple.match.';
const held = (id) => {
  let h = {};
  try { h = JSON.parse(localStorage.getItem(KEY + id)) || {}; } catch (_) { /* unreadable: nothing held */ }
  if (h.token && h.seat !== null && h.seat !== undefined && !h.tokens) h.tokens = { [h.seat]: h.token };
  return h;
};
const hold = (id, h) => localStorage.setItem(KEY + id, JSON.stringify({ ...held(id), ...h, at: Date.now() }));
const forget = (id) => localStorage.removeItem(KEY + id);
const tokens = () => held(M.id).tokens || {};
const tokenFor = (seat) => (seat === null || seat === undefined ? null : tokens()[seat] || null);
const anyToken = () => Object.values(tokens())[0] || null;
const seatToken = () => tokenFor(M.viewer);
const ownerToken = () => held(M.id).owner;
(function pruneHeld() {
  const month = 30 * 24 * 3600 * 1000;
  for (let i = localStorage.length - 1; i >= 0; i--) {
    const k = localStorage.key(i);
    if (!k || !k.startsWith(KEY)) continue;
    try { if (Date.now() - (JSON.parse(localStorage.getItem(k)).at || 0) > month) localStorage.removeItem(k); } catch (_) { localStorage.removeItem(k); }
  }
})();

// A finished game's secrets are no use to keep: its tokens go once its page is left.
function leaveMatch() {
  if (M.id && M.snap && !M.snap.replay && (M.snap.result || M.snap.status === 'stopped')) forget(M.id);
}
window.addEventListener('pagehide', leaveMatch);

// ---------------------------------------------------------------- home: the games, levels, friends, watching

// A board drawn from a game's opening position, for the gallery.
function thumbnail(info) {
  const saved = M.viewer;
  M.viewer = null;
  try {
    const fake = { name: info.name, view: info.view, turn: { kind: 'terminal' }, legal: [], viewer: null, ply: 0,
      seats: Array.from({ length: info.players }, () => ({ spec: '', human: false })) };
    return (RENDERERS[info.name] || renderText)(info.view, fake, null).board;
  } catch (_) {
    return '';
  } finally {
    M.viewer = saved;
  }
}

// The seats of a game against the computer: the person at `seat`, the level's agent elsewhere.
function levelSeats(players, agent, seat) {
  return Array.from({ length: players }, (_, i) => (i === seat ? 'human' : agent));
}

async function startMatch(body, errorEl, level) {
  try {
    const made = await api('POST', '/api/matches', body);
    const tokensMade = Object.fromEntries(made.seats.map((s) => [s.seat, s.token]));
    hold(made.id, { owner: made.owner, tokens: tokensMade, invites: made.invites, hot: made.seats.length > 1, ...(level ? { level } : {}) });
    go(made.url);
  } catch (e) {
    if (errorEl) errorEl.textContent = e.message;
    else showError(e.message);
  }
}

// A game's setting on the front page: its own (variant 0) or one of its variants, with the
// levels measured in it (a variant without levels of its own plays the game's, unmeasured there).
function setupOf(g, k = Number((document.querySelector(`select.variant[data-game="${g.name}"]`) || {}).value || 0)) {
  if (!k || !(g.variants || [])[k - 1]) return { name: g.variant, spec: g.spec || g.name, levels: g.levels || [], measured: true };
  const v = g.variants[k - 1];
  return { name: v.name, about: v.about, spec: v.spec, levels: v.levels || g.levels || [], measured: !!v.levels, pick: v.pick };
}

function levelsHtml(g, setup) {
  return setup.levels.map((l, k) => {
    const shown = setup.measured && l.strength;
    const line = shown ? `<br><span class="hint strength" title="${esc(l.strength)}">${esc(l.short || l.strength)}${setup.pick && pickedAll(g, setup) ? ' (over random pairings)' : ''}</span>`
      : k > 0 && !setup.measured ? '<br><span class="hint">not measured in this variant</span>' : '';
    return `<div class="level"><button type="button" class="level-button" data-game="${esc(g.name)}" data-level="${k}">${esc(l.name)}</button> <span><span class="about">${esc(l.about)}</span>${line}</span></div>`;
  }).join('');
}

// What a variant lets a player pick at the table (Santorini's gods): one choice per seat, each
// "at random" or a name; the seats' picks in seat order.
function pickHtml(g, setup) {
  if (!setup.pick) return setup.about ? `<span class="hint">${esc(setup.about)}</span>` : '';
  const p = setup.pick;
  return `<span class="hint">${esc(setup.about || '')}</span>` + p.seats.map((label, i) => `<label class="hint">${esc(label)} <select class="picked" data-game="${esc(g.name)}" data-seat="${i}"><option value="">at random</option>${p.from.map((n) => `<option value="${esc(n)}">${esc(capital(n))}</option>`).join('')}</select></label>`).join(' ');
}

function pickedAll(g) {
  return [...document.querySelectorAll(`select.picked[data-game="${g.name}"]`)].some((s) => s.value);
}

// The spec of a setting with `param` set to `value` (the game's specs are NAME:KEY=VALUE,...).
function withParam(spec, param, value) {
  const [name, rest] = spec.split(/:(.*)/s);
  const parts = (rest || '').split(',').filter((x) => x && !x.startsWith(param + '='));
  parts.push(`${param}=${value}`);
  return `${name}:${parts.join(',')}`;
}

// The game spec to play: the setting's, with the picks (ours first: `order[i]` is the seat of
// the i-th pick). A pick left at random is drawn here, different from the others'.
function specToPlay(g, setup, order) {
  if (!setup.pick) return setup.spec;
  const chosen = [...document.querySelectorAll(`select.picked[data-game="${g.name}"]`)].map((s) => s.value);
  if (!chosen.some((x) => x)) return setup.spec;
  const bySeat = [];
  chosen.forEach((name, i) => { bySeat[order[i]] = name; });
  for (let i = 0; i < bySeat.length; i++) {
    if (bySeat[i]) continue;
    const free = setup.pick.from.filter((n) => !bySeat.includes(n));
    bySeat[i] = free[Math.floor(Math.random() * free.length)];
  }
  return withParam(setup.spec, setup.pick.param, bySeat.join('+'));
}

async function showHome() {
  document.title = 'meeple';
  $('#where').textContent = 'play';
  M.viewer = null;
  const app = $('#app');
  const advanced = ['game', 'advanced'].some((k) => new URLSearchParams(location.search).has(k));
  const [catalog, matches, records, games] = await Promise.all([api('GET', '/api/catalog'), api('GET', '/api/matches'), api('GET', '/api/records'), api('GET', '/api/games?limit=20')]);
  const mine = matches.matches.filter((m) => Object.keys(held(m.id).tokens || {}).length && m.status !== 'over' && m.status !== 'replay');
  const watching = matches.matches.filter((m) => m.status !== 'replay');
  app.innerHTML = `
    ${mine.length ? `<div class="panel"><h2>Your games</h2><ul class="mine">${mine.map((m) => `<li><a href="/m/${esc(m.id)}">${esc(m.game.split(':')[0])}</a> · ${m.seats.map(esc).join(' · ')} · ply ${m.ply} · ${esc(m.status)}</li>`).join('')}</ul></div>` : ''}
    <div class="gallery" id="gallery">${catalog.games.map((g) => `
      <div class="game-card" data-game="${esc(g.name)}">
        <div class="thumb" data-thumb="${esc(g.name)}"></div>
        <h2>${esc(g.title || g.name)}</h2>
        <p class="blurb">${esc(g.blurb || g.about)}</p>
        ${(g.variants || []).length ? `<label class="variant-choice">Variant <select class="variant" data-game="${esc(g.name)}">${[g.variant, ...g.variants.map((v) => v.name)].map((n, k) => `<option value="${k}">${esc(n)}</option>`).join('')}</select></label>
          <div class="pick" data-pick="${esc(g.name)}"></div>` : ''}
        ${(g.levels || []).length ? `<div class="levels"><b>Play the computer</b>
          <label class="hint">you play <select class="seat-choice" data-game="${esc(g.name)}"><option value="0">first</option><option value="1">second</option><option value="random">either</option></select></label>
          <div data-levels="${esc(g.name)}">${levelsHtml(g, setupOf(g))}</div>
        </div>` : ''}
        <div class="controls"><button type="button" class="friend" data-game="${esc(g.name)}">Play a friend</button><button type="button" class="rules" data-game="${esc(g.name)}">Rules</button><button type="button" class="watch" data-game="${esc(g.name)}">Watch the computer</button></div>
        <div class="error" data-error="${esc(g.name)}"></div>
      </div>`).join('')}
    </div>
    <div class="panel">
      <h2>Games on this server</h2>
      ${watching.length ? `<table class="list"><tr><th>match</th><th>game</th><th>seats</th><th>ply</th><th>status</th></tr>${watching.map((m) => `<tr><td><a href="/m/${esc(m.id)}">${esc(m.id.slice(0, 8))}</a>${held(m.id).tokens ? ' (yours)' : ''}</td><td>${esc(m.game)}${m.open ? ' <span class="tag" title="its seed was chosen by a player">open</span>' : ''}</td><td>${m.seats.map(esc).join(' · ')}</td><td>${m.ply}</td><td>${esc(m.status)}</td></tr>`).join('')}</table>` : '<p class="hint">none yet</p>'}
    </div>
    <div class="panel">
      <h2>Past games</h2>
      <table class="list" id="past"><tr><th>game</th><th>seats</th><th>plies</th><th>result</th><th></th></tr></table>
      <p class="hint" id="past-empty" ${games.games.length ? 'hidden' : ''}>finished games are kept here</p>
      <button type="button" id="past-more" ${games.next ? '' : 'hidden'}>More</button>
    </div>
    <details class="panel" id="advanced" ${advanced ? 'open' : ''}>
      <summary><b>Advanced</b>: any agent spec, seeds, times, records</summary>
      <h2>New game</h2>
      <form id="new-game" class="form" autocomplete="off">
        <label for="game">Game</label>
        <div><select id="game" name="game">${catalog.games.map((g) => `<option value="${esc(g.name)}">${esc(g.name)}</option>`).join('')}</select> <span id="about" class="hint"></span></div>
        <label>Options</label><div id="params"></div>
        <label>Seats</label><div id="seats"></div>
        <label for="seed">Seed</label><div><input id="seed" inputmode="numeric" pattern="[0-9]*" placeholder="secret"> <span class="hint">empty: the server deals in secret; a seed you choose deals the same dice and cards every time, and marks the game <i>open</i></span></div>
        <label for="move-time">Time per move</label><div><input id="move-time" type="number" min="10" max="60000" value="1000"> ms <span class="hint">for agents</span></div>
        <label for="delay">Pause when watching</label><div><input id="delay" type="number" min="0" max="10000" value="500"> ms</div>
        <label for="hot">One screen</label><div><input id="hot" type="checkbox"> <span class="hint">play every person seat here (else the others get join links)</span></div>
        <span></span><div><button class="primary" type="submit" id="start">Start</button> <span id="form-error" class="error"></span></div>
      </form>
      <h2>Replay a record</h2>
      <p class="hint">A records file of <code>meeple arena --records FILE</code> (JSON lines), or a record downloaded from a game here.</p>
      <div class="controls"><input type="file" id="records-file" accept=".jsonl,.json,.txt"> game <input type="number" id="records-index" min="0" value="0" style="width:5em" title="from 0, as meeple replay --game counts"> <button type="button" id="replay">Open</button></div>
      ${records.files.length ? `<p>Served files: ${records.files.map((f) => `<button type="button" class="served" data-file="${f.file}">${esc(f.name)}</button>`).join(' ')}</p>` : ''}
      <span id="replay-error" class="error"></span>
    </details>`;
  const byName = Object.fromEntries(catalog.games.map((g) => [g.name, g]));
  // The gallery: each board drawn from its opening position; levels, a friend, watching.
  for (const g of catalog.games) {
    api('GET', '/api/game?spec=' + encodeURIComponent(g.spec || g.name)).then((info) => {
      byName[g.name].info = info;
      const el = document.querySelector(`[data-thumb="${g.name}"]`);
      if (el) el.innerHTML = thumbnail(info);
    }).catch(() => { /* no thumbnail */ });
  }
  const infos = {};
  const infoOf = async (spec) => infos[spec] || (infos[spec] = await api('GET', '/api/game?spec=' + encodeURIComponent(spec)));
  const errorOf = (name) => document.querySelector(`[data-error="${name}"]`);
  // A variant redraws its card: the board of its opening, its levels, what it lets a player pick.
  const showSetup = (g) => {
    const setup = setupOf(g);
    const levels = document.querySelector(`[data-levels="${g.name}"]`);
    if (levels) levels.innerHTML = levelsHtml(g, setup);
    const pick = document.querySelector(`[data-pick="${g.name}"]`);
    if (pick) {
      pick.innerHTML = pickHtml(g, setup);
      pick.querySelectorAll('select.picked').forEach((s) => s.addEventListener('change', () => { if (levels) levels.innerHTML = levelsHtml(g, setup); bindLevels(); }));
    }
    bindLevels();
    infoOf(setup.spec).then((info) => {
      const el = document.querySelector(`[data-thumb="${g.name}"]`);
      if (el) el.innerHTML = thumbnail(info);
    }).catch(() => { /* no thumbnail */ });
  };
  const bindLevels = () => document.querySelectorAll('.level-button').forEach((b) => { b.onclick = async () => {
    const g = byName[b.dataset.game];
    const setup = setupOf(g);
    const level = setup.levels[Number(b.dataset.level)];
    try {
      const players = (await infoOf(setup.spec)).players;
      const choice = document.querySelector(`.seat-choice[data-game="${g.name}"]`).value;
      const seat = choice === 'random' ? Math.floor(Math.random() * players) : Math.min(Number(choice), players - 1);
      // Picks: the person's for their seat, the computer's for the other.
      const spec = specToPlay(g, setup, [seat, ...Array.from({ length: players }, (_, i) => i).filter((i) => i !== seat)]);
      const info = await infoOf(spec);
      startMatch({ game: info.spec, seats: levelSeats(info.players, level.agent, seat), move_time_ms: level.move_time_ms || 1000 }, errorOf(g.name), level.name);
    } catch (e) {
      errorOf(g.name).textContent = e.message;
    }
  }; });
  document.querySelectorAll('select.variant').forEach((s) => {
    s.addEventListener('change', () => showSetup(byName[s.dataset.game]));
    // A page restored from the browser's history keeps the variant chosen before.
    if (Number(s.value)) showSetup(byName[s.dataset.game]);
  });
  bindLevels();
  const seatsInOrder = (n) => Array.from({ length: n }, (_, i) => i);
  document.querySelectorAll('button.friend').forEach((b) => b.addEventListener('click', async () => {
    const g = byName[b.dataset.game];
    const setup = setupOf(g);
    try {
      const info = await infoOf(specToPlay(g, setup, seatsInOrder((await infoOf(setup.spec)).players)));
      startMatch({ game: info.spec, seats: Array(info.players).fill('human') }, errorOf(g.name));
    } catch (e) {
      errorOf(g.name).textContent = e.message;
    }
  }));
  document.querySelectorAll('button.rules').forEach((b) => b.addEventListener('click', () => {
    const g = byName[b.dataset.game];
    const setup = setupOf(g);
    showRules(specToPlay(g, setup, [0, 1]));
  }));
  document.querySelectorAll('button.watch').forEach((b) => b.addEventListener('click', async () => {
    const g = byName[b.dataset.game];
    const setup = setupOf(g);
    try {
      const info = await infoOf(specToPlay(g, setup, seatsInOrder((await infoOf(setup.spec)).players)));
      const top = setup.levels[setup.levels.length - 1];
      startMatch({ game: info.spec, seats: Array(info.players).fill(top ? top.agent : info.opponent), delay_ms: 500, move_time_ms: (top && top.move_time_ms) || 1000 }, errorOf(g.name));
    } catch (e) {
      errorOf(g.name).textContent = e.message;
    }
  }));
  // Past games, a page at a time.
  let next = games.next;
  const addPast = (list) => {
    $('#past').insertAdjacentHTML('beforeend', list.map((g) => `<tr><td>${esc(g.game.split(':')[0])}</td><td>${(g.seats || []).map(esc).join(' · ')}</td><td>${g.plies}</td><td>${esc((g.returns || []).join(' : '))}</td><td><a href="/m/${esc(g.id)}">open</a> · <a href="/api/games/${esc(g.id)}/record" download>record</a></td></tr>`).join(''));
  };
  addPast(games.games);
  $('#past-more').addEventListener('click', async () => {
    const page = await api('GET', `/api/games?limit=20&before=${encodeURIComponent(next)}`);
    addPast(page.games);
    next = page.next;
    $('#past-more').hidden = !next;
  });
  // Advanced: the form built from the server's catalog.
  const gameSel = $('#game');
  let info = null;
  const params = () => [...document.querySelectorAll('#params input')].filter((i) => i.value.trim() !== '').map((i) => `${i.name}=${i.value.trim()}`);
  const spec = () => gameSel.value + (params().length ? ':' + params().join(',') : '');
  async function refreshSeats() {
    try {
      info = await api('GET', '/api/game?spec=' + encodeURIComponent(spec()));
      $('#form-error').textContent = '';
    } catch (e) {
      $('#form-error').textContent = e.message;
      return;
    }
    const agents = info.agents.map((a) => a.name);
    const old = [...document.querySelectorAll('#seats input')].map((i) => i.value);
    const defaultAgent = info.opponent || (agents.includes('mcts') ? 'mcts:time=1s' : agents[0]);
    $('#seats').innerHTML = Array.from({ length: info.players }, (_, i) => `
      <div class="seat"><span>${i}</span><select data-seat="${i}"><option value="human">human</option>${agents.map((a) => `<option>${esc(a)}</option>`).join('')}</select>
      <input data-seat="${i}" list="agent-list" value="${esc(old[i] ?? (i === 0 ? 'human' : defaultAgent))}" aria-label="seat ${i} agent spec"></div>`).join('') +
      `<datalist id="agent-list">${info.agents.map((a) => `<option value="${esc(a.name)}">${esc(a.about)}</option>`).join('')}</datalist>
      <div class="hint">an agent spec (e.g. <code>mcts:iters=2000</code>, <code>alphabeta:depth=4</code>) or <code>human</code>; <code>meeple agents</code> lists every option</div>`;
    document.querySelectorAll('#seats select').forEach((s) => {
      const input = $(`#seats input[data-seat="${s.dataset.seat}"]`);
      s.value = agents.includes(input.value.split(':')[0]) ? input.value.split(':')[0] : 'human';
      s.addEventListener('change', () => { input.value = s.value === 'human' ? 'human' : s.value; });
    });
  }
  function refreshParams() {
    const g = byName[gameSel.value];
    $('#about').textContent = g.about;
    $('#params').innerHTML = g.params.length ? g.params.map((p) => `<div><label class="hint" for="param-${esc(p.name)}">${esc(p.name)}</label> <input id="param-${esc(p.name)}" name="${esc(p.name)}" placeholder="${esc(p.default)}" title="${esc(p.help)} (${esc(p.accepts)})"> <span class="hint">${esc(p.accepts)}</span></div>`).join('') : '<span class="hint">none</span>';
    document.querySelectorAll('#params input').forEach((i) => i.addEventListener('change', refreshSeats));
    refreshSeats();
  }
  gameSel.addEventListener('change', refreshParams);
  const params0 = new URLSearchParams(location.search).get('game');
  if (params0 && byName[params0]) gameSel.value = params0;
  refreshParams();
  $('#new-game').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const seats = [...document.querySelectorAll('#seats input')].map((i) => i.value.trim());
    const persons = seats.map((s, i) => [s, i]).filter(([s]) => s === 'human').map(([, i]) => i);
    $('#start').disabled = true;
    const seedText = $('#seed').value.trim();
    await startMatch({
      game: spec(), seats, ...(seedText === '' ? {} : { seed: seedText }),
      move_time_ms: Number($('#move-time').value) || 1000, delay_ms: Number($('#delay').value) || 0,
      ...($('#hot').checked ? { play: persons } : {}),
    }, $('#form-error'));
    $('#start').disabled = false;
  });
  async function openReplay(body, query, contentType) {
    try {
      const res = await fetch('/api/replays' + (query || ''), { method: 'POST', headers: { 'Content-Type': contentType || 'application/json' }, body });
      const made = await res.json();
      if (!res.ok) throw new Error(made.error || `${res.status}`);
      go(made.url);
    } catch (e) {
      $('#replay-error').textContent = e.message;
    }
  }
  $('#replay').addEventListener('click', async () => {
    const f = $('#records-file').files[0];
    if (!f) { $('#replay-error').textContent = 'choose a records file first'; return; }
    // The file goes as it is, as JSON lines: the server reads it as it arrives.
    openReplay(f, `?index=${Math.max(0, Number($('#records-index').value) || 0)}`, 'application/x-ndjson');
  });
  document.querySelectorAll('button.served').forEach((b) => b.addEventListener('click', () =>
    openReplay(JSON.stringify({ file: Number(b.dataset.file), index: Math.max(0, Number($('#records-index').value)) }))));
}

// ---------------------------------------------------------------- a match

const M = {
  id: null, snap: null, viewer: null, browsing: null, sel: [], source: null, analysis: null, hint: null, busy: false, log: [],
};
window.M = M; // the match as the page holds it, for the browser tests and the console

async function showMatch(id) {
  // A new match starts clean: the advisor is the new game's (another game's agent may not play
  // it), and no half-built offer or pending frame carries over.
  Object.assign(M, { id, snap: null, browsing: null, sel: [], analysis: null, hint: null, log: [], latest: null, advisor: null, draft: null, pending: null, mode: null });
  // A join link: claim its seat with the invitation, keep the seat's token, and tidy the address
  // first, so the code never stays in the history.
  const frag = new URLSearchParams(location.hash.slice(1));
  const invite = frag.get('invite');
  let claimProblem = null;
  if (location.hash) history.replaceState(null, '', location.pathname + location.search);
  if (invite) {
    try {
      const c = await api('POST', `/api/matches/${id}/claim`, { invite });
      hold(id, { tokens: { ...tokens(), [c.seat]: c.token } });
    } catch (e) {
      claimProblem = e.message;
    }
  }
  const q = new URLSearchParams(location.search);
  const asked = q.has('viewer') ? (q.get('viewer') === 'spectator' ? null : Number(q.get('viewer'))) : undefined;
  let snap;
  try {
    const first = asked === undefined ? anyToken() : tokenFor(asked);
    snap = await api('GET', `/api/matches/${id}${asked === undefined ? '' : `?viewer=${asked === null ? 'spectator' : asked}`}`, undefined, first);
  } catch (e) {
    $('#app').innerHTML = `<div class="panel error">${esc(e.message)} <a href="/">play</a></div>`;
    return;
  }
  // Play as the seat this browser holds unless the address says otherwise.
  M.viewer = asked === undefined ? snap.viewer : asked;
  if (snap.replay && snap.status !== 'over') M.browsing = 0;
  // The analysis agent is the game's own until the person names another for this game; a
  // match of another game starts from that game's.
  if (M.advisorGame !== snap.game) {
    M.advisorGame = snap.game;
    M.advisor = undefined;
    try { M.advisor = (await api('GET', '/api/game?spec=' + encodeURIComponent(snap.game))).advisor; } catch (_) { /* the default below */ }
  }
  $('#app').innerHTML = `<div class="match"><div class="board" id="board"></div><div class="side" id="side"></div></div>`;
  await refresh();
  if (claimProblem) showError(`The join link did not give you a seat: ${claimProblem}`);
  if (!snap.replay) listen();
}

// The page's event stream: a seat's view opens with a one-time ticket (its token stays in a
// header); the server ends streams now and then, and the page opens another, until the game is over.
async function listen() {
  if (M.source) { M.source.close(); M.source = null; }
  const id = M.id;
  const viewer = M.viewer;
  let query = `viewer=${viewer === null ? 'spectator' : viewer}`;
  const t = seatToken() || (viewer === null ? null : ownerToken());
  if (t) {
    try {
      query += `&ticket=${(await api('POST', `/api/matches/${id}/ticket`, {}, t)).ticket}`;
    } catch (e) {
      showError(e.message);
    }
  }
  if (M.id !== id || M.viewer !== viewer) return;
  const source = new EventSource(`/api/matches/${id}/events?${query}`);
  M.source = source;
  source.addEventListener('state', (ev) => {
    const snap = JSON.parse(ev.data);
    if (M.browsing === null) {
      if (!newer(snap)) return;
      if (M.pacing || (M.pace && !snap.replay && othersMoved(snap))) {
        // An event holds the log lines since the one before: a queued one's are kept.
        if (M.pending && snap.log_start > M.pending.log_start) {
          snap.log = M.pending.log.filter((l) => l.ply <= snap.log_start).concat(snap.log);
          snap.log_start = M.pending.log_start;
        }
        M.pending = snap;
        if (!M.pacing) pace();
        return;
      }
      if (!M.snap || snap.ply !== M.snap.ply) M.sel = [];
      take(snap);
      if (followMover()) return;
      render();
    } else {
      M.latest = snap;
      renderSide();
    }
  });
  source.addEventListener('problem', (ev) => showError(JSON.parse(ev.data).error));
  source.onerror = () => {
    source.close();
    if (M.source !== source) return;
    M.source = null;
    if (M.snap && (M.snap.result || M.snap.status === 'stopped')) return;
    setTimeout(() => { if (M.id === id && !M.source && M.viewer === viewer) { refresh(); listen(); } }, 1000);
  };
}

// The other players' moves, one at a time: this browser may show each position after another
// player's move for a while (`M.pace` ms, its own choice kept in this browser) before the next,
// so a computer's turn of several steps is seen rather than read from the log. The game itself
// does not wait; the page catches up.
M.pace = Number(localStorage.getItem('meeple.pace')) || 0;

function paceSteps(snap) {
  const shown = M.snap ? M.snap.ply : 0;
  return snap.log.filter((l) => l.player !== undefined && l.player !== M.viewer && l.ply > shown && l.ply < snap.ply).map((l) => l.ply);
}

function othersMoved(snap) {
  const shown = M.snap ? M.snap.ply : 0;
  return snap.log.some((l) => l.player !== undefined && l.player !== M.viewer && l.ply > shown);
}

async function pace() {
  M.pacing = true;
  const hold = () => new Promise((r) => setTimeout(r, M.pace));
  try {
    while (M.pending && M.browsing === null) {
      const target = M.pending;
      const steps = M.pace ? paceSteps(target) : [];
      if (steps.length) {
        const v = M.viewer === null ? 'spectator' : M.viewer;
        const frame = await api('GET', `/api/matches/${M.id}?viewer=${v}&ply=${steps[0]}`, undefined, seatToken());
        if (M.browsing !== null) break;
        M.sel = [];
        take(frame);
        render();
        await hold();
        continue;
      }
      // The latest position; held too if another player's move made it, before anything newer.
      M.pending = null;
      const moved = M.pace && othersMoved(target);
      if (!M.snap || target.ply !== M.snap.ply) M.sel = [];
      take(target);
      if (!followMover()) render();
      if (moved) await hold();
    }
  } catch (e) {
    // A frame that cannot be had (an undo took it back): show the latest.
    if (M.pending) { take(M.pending); M.pending = null; render(); }
  } finally {
    M.pacing = false;
  }
}

// At one screen (the page holds several seats' tokens), the view follows whoever is to move.
function followMover() {
  const s = M.snap;
  if (!s || M.browsing !== null || s.result || s.turn.kind !== 'player') return false;
  const p = s.turn.player;
  if (p === M.viewer || !tokenFor(p) || Object.keys(tokens()).length < 2) return false;
  M.viewer = p;
  M.sel = [];
  refresh();
  listen();
  return true;
}

async function refresh() {
  const v = M.viewer === null ? 'spectator' : M.viewer;
  const ply = M.browsing === null ? '' : `&ply=${M.browsing}`;
  try {
    const snap = await api('GET', `/api/matches/${M.id}?viewer=${v}${ply}`, undefined, seatToken());
    if (M.browsing === null) M.log = [];
    take(snap);
  } catch (e) {
    showError(e.message);
    return;
  }
  render();
}

// A snapshot or event carries the log from `log_start` on (events: only what is new); the page
// keeps the whole line it has seen.
function take(snap) {
  M.snap = snap;
  if (M.browsing !== null || snap.replay) { M.log = snap.log; return; }
  const last = M.log.length ? M.log[M.log.length - 1].ply : 0;
  M.log = snap.log_start <= last ? M.log.filter((e) => e.ply <= snap.log_start).concat(snap.log) : snap.log;
}

// Answers and events can cross: keep the newest state of the match (undo makes plies go back,
// so the server's change counter decides, not the ply).
function newer(snap) {
  return !M.snap || M.snap.replay || snap.version >= M.snap.version;
}

function showError(msg) {
  const el = $('#message');
  if (el) { el.textContent = msg; el.className = 'banner err'; el.hidden = false; }
}

function candidates() {
  const legal = (M.browsing === null && M.snap && M.snap.legal) || [];
  return legal.filter((l) => M.sel.every((t, i) => l.path[i] === t));
}

function nextTargets() {
  const next = new Set();
  for (const l of candidates()) if (l.path.length > M.sel.length) next.add(l.path[M.sel.length]);
  return next;
}

async function choose(target) {
  if (M.busy || !nextTargets().has(target)) return;
  M.sel.push(target);
  const left = candidates();
  if (left.length === 1 && left[0].path.length === M.sel.length) await submit(left[0].id);
  render();
}

// Sends one legal move (by id) for the seat in view.
async function submit(id) {
  if (M.busy) return;
  M.busy = true;
  try {
    const snap = await api('POST', `/api/matches/${M.id}/moves`, { ply: M.snap.ply, id, viewer: M.viewer }, seatToken());
    M.sel = [];
    M.hint = null;
    if (newer(snap)) take(snap);
  } catch (e) {
    M.sel = [];
    showError(e.message);
    if (e.status === 409) await refresh();
  } finally {
    M.busy = false;
  }
}

// What a click does, by the kind of its target, where a square takes two kinds.
const KIND_WORDS = { c: 'places', w: 'picks a worker', m: 'moves', b: 'builds', dome: 'builds a dome' };

function targetLabel(t) {
  const [kind, ...rest] = t.split(':');
  const name = rest.join(':');
  return kind === 'btn' ? name : `${kind === 'r' ? 'rotation' : kind === 's' ? 'seat' : kind} ${name}`;
}

function render() {
  const snap = M.snap;
  if (!snap) return;
  $('#where').textContent = `${snap.game} · ${snap.seed === null ? 'secret deal' : `seed ${snap.seed}`}${snap.open ? ' · open' : ''}${snap.replay ? ' · replay' : ''}`;
  const renderer = RENDERERS[snap.name] || renderText;
  const drawn = renderer(snap.view, snap, M.viewer);
  $('#board').innerHTML = `${drawn.board}<div class="choices" id="choices"></div><div class="extra">${drawn.extra || ''}</div>`;
  // Highlight what may be clicked next; what the board does not draw becomes a button.
  const next = nextTargets();
  const onBoard = new Set();
  // A square that is the target of two kinds of click (Prometheus: move there or build there
  // first; Atlas: a block or a dome; Artemis: move again or build) does what the mode bar says.
  const kinds = [];
  document.querySelectorAll('#board [data-t]').forEach((el) => {
    const ts = el.dataset.t.split(' ').filter((t) => next.has(t));
    if (ts.length > 1) ts.forEach((t) => { const k = t.split(':')[0]; if (!kinds.includes(k)) kinds.push(k); });
    // A target of a square is on the board, whichever mode reaches it.
    if (ts.length > 1) ts.forEach((t) => onBoard.add(t));
  });
  // Kinds of target that a renderer keeps apart (Catan's corners and roads, each large enough
  // to hit only when the other is not offered): both offered, the bar chooses.
  const apart = (drawn.apart || []).filter((k) => [...next].some((t) => t.startsWith(k + ':')));
  if (apart.length > 1) {
    apart.forEach((k) => { if (!kinds.includes(k)) kinds.push(k); });
    next.forEach((t) => { if (apart.includes(t.split(':')[0])) onBoard.add(t); });
  }
  const at = `${snap.ply}/${M.sel.join(' ')}`;
  if (M.modeAt !== at) { M.modeAt = at; M.mode = null; }
  if (!kinds.includes(M.mode)) M.mode = kinds.includes(drawn.mode) ? drawn.mode : kinds[0] || null;
  document.querySelectorAll('#board [data-t]').forEach((el) => {
    const ts = el.dataset.t.split(' ');
    let hit = ts.find((t) => next.has(t) && t.startsWith(M.mode + ':')) || ts.find((t) => next.has(t));
    if (hit && apart.length > 1 && apart.includes(hit.split(':')[0]) && !hit.startsWith(M.mode + ':')) {
      hit = null;
      el.style.pointerEvents = 'none';
    }
    // A wide hit area that is no target now must not catch a click meant for its neighbour.
    if (!hit && el.classList.contains('hit')) el.style.pointerEvents = 'none';
    if (hit) {
      onBoard.add(hit);
      el.classList.add('hl');
      el.addEventListener('click', (ev) => { ev.stopPropagation(); choose(hit); });
      if (drawn.hover) el.addEventListener('mouseenter', () => drawn.hover(hit, M.sel, candidates()));
    }
    if (ts.some((t) => M.sel.includes(t))) el.classList.add('sel');
  });
  // A renderer may draw its own controls for some targets (Catan's offer builder).
  const owned = new Set(drawn.owns || []);
  const rest = [...next].filter((t) => !onBoard.has(t) && !owned.has(t));
  // A button that completes one move is labelled with the move in words.
  const label = (t) => {
    const done = candidates().filter((l) => l.path[M.sel.length] === t);
    return done.length === 1 && done[0].path.length === M.sel.length + 1 && done[0].words ? done[0].words : targetLabel(t);
  };
  const named = drawn.labels || {};
  const modes = kinds.length > 1 ? `<div class="modes" id="modes" role="radiogroup" aria-label="what a click on a square does"><span class="hint">A click on a square</span>${kinds.map((k) => `<button type="button" role="radio" aria-checked="${k === M.mode}" class="mode${k === M.mode ? ' on' : ''}" data-mode="${esc(k)}">${esc((drawn.modes || {})[k] || KIND_WORDS[k] || k)}</button>`).join('')}</div>` : '';
  $('#choices').innerHTML = modes + rest.map((t) => `<button type="button" class="hl${named[t] ? ' skip' : ''}" data-choice="${esc(t)}">${esc(named[t] || label(t))}</button>`).join('') +
    (M.sel.length ? ' <button type="button" id="clear-sel">clear</button>' : '');
  document.querySelectorAll('#choices [data-choice]').forEach((b) => b.addEventListener('click', () => choose(b.dataset.choice)));
  document.querySelectorAll('#modes [data-mode]').forEach((b) => b.addEventListener('click', () => { M.mode = b.dataset.mode; render(); }));
  const clear = $('#clear-sel');
  if (clear) clear.addEventListener('click', () => { M.sel = []; render(); });
  // Another player's last move, marked on the board.
  if (snap.last && snap.last.player !== M.viewer) {
    const marks = new Set((snap.last.turn || [snap.last.path]).flat());
    document.querySelectorAll('#board [data-t], #board [data-m]').forEach((el) => {
      if (el.dataset.owner !== undefined && Number(el.dataset.owner) !== snap.last.player) return;
      if ((el.dataset.m || el.dataset.t).split(' ').some((t) => marks.has(t))) el.classList.add('last');
    });
  }
  if (drawn.bind) drawn.bind();
  if (M.analysis && M.analysis.ply === snap.ply && M.browsing === null) drawAdvice(M.analysis);
  renderSide();
}

const capital = (t) => t.charAt(0).toUpperCase() + t.slice(1);

// A seat in words: "you", a person by seat, the computer by its level's name; the agent's spec
// is for the tooltip, not the sentence.
function seatName(snap, i) {
  const s = snap.seats[i];
  if (M.viewer === i && tokenFor(i)) return 'you';
  if (s.human) return `seat ${i}`;
  const level = held(M.id).level;
  const computers = snap.seats.filter((x) => !x.human).length;
  return `the computer${level ? ` (${level})` : ''}${computers > 1 ? ` at seat ${i}` : ''}`;
}

function outcomeText(snap) {
  const r = snap.result.returns;
  const best = Math.max(...r);
  const winners = r.map((v, i) => [v, i]).filter(([v]) => v === best).map(([, i]) => i);
  const gaveUp = snap.result.resigned;
  if (gaveUp !== undefined && gaveUp !== null) {
    const quitter = seatName(snap, gaveUp);
    const rest = winners.map((i) => seatName(snap, i));
    return `Game over: ${capital(quitter)} resigned; ${rest.join(' and ')} ${rest.length > 1 ? 'share the win' : rest[0] === 'you' ? 'win' : 'wins'}`;
  }
  if (winners.length === r.length) return 'Game over: a draw';
  const names = winners.map((i) => seatName(snap, i));
  const you = names.length === 1 && names[0] === 'you';
  const who = names.join(' and ');
  const verb = you ? 'win' : names.length > 1 ? 'share the win' : 'wins';
  return `Game over: ${capital(who)} ${verb} · scores ${snap.result.scores.join(' : ')}`;
}

function renderSide() {
  const snap = M.snap;
  const live = M.latest && M.browsing !== null ? M.latest : snap;
  const watching = !snap.seats.some((s) => s.human);
  let banner = '';
  if (snap.result) banner = `<div class="banner over" id="result" title="${esc(snap.seats.map((x, i) => `seat ${i + 1}: ${x.spec}`).join('; '))}">${esc(outcomeText(snap))}</div>`;
  else if (snap.turn.kind === 'player') {
    const p = snap.turn.player;
    const you = snap.legal.length > 0;
    const asked = snap.prompt ? esc(snap.prompt) : 'Your move';
    const waiting = `${esc(capital(seatName(snap, p)))} ${snap.thinking === p ? 'is thinking…' : 'to move'}${snap.prompt ? ` — ${esc(snap.prompt.toLowerCase())}` : ''}`;
    banner = `<div class="banner" id="turn">${you ? `<b id="prompt">${asked}</b>` : waiting}${snap.replay || M.browsing !== null ? ` · ply ${snap.ply} of ${snap.plies}` : ''}</div>`;
  }
  // The tab says whose move it is, so a person in another tab sees when it is theirs.
  const yours = !live.result && live.legal && live.legal.length > 0 && !live.replay;
  document.title = `${live.result ? 'Game over · ' : yours ? '● Your move · ' : ''}${snap.name} · meeple`;
  const seats = snap.seats.map((s, i) => `<li class="${snap.turn.player === i ? 'tomove' : ''}" title="seat ${i}: ${esc(s.spec)}"><span class="dot" style="background:${seatColour(snap.name, i)}"></span>${esc(capital(seatName(snap, i)))}${s.human ? '' : ` <span class="hint">${esc(s.spec.split(':')[0])}</span>`}${s.human && !s.seated && !snap.replay ? ' <span class="hint">(waiting to be joined)</span>' : ''}</li>`).join('');
  const log = (M.browsing === null && !snap.replay ? M.log : snap.log).slice(-400).map((m) => `<li value="${m.ply}" data-ply="${m.ply}" class="${m.chance ? 'chance' : ''}${M.browsing !== null && m.ply === snap.ply ? ' cur' : ''}">${m.chance ? '· ' : `<span class="who" style="color:${seatColour(snap.name, m.player)}">●</span> ${esc(capital(seatName(snap, m.player)))}: `}<span title="${esc(m.text)}">${esc(m.words || m.text)}</span></li>`).join('');
  const viewers = [`<option value="spectator">spectator</option>`, ...snap.seats.map((_, i) => `<option value="${i}" ${M.viewer === i ? 'selected' : ''}>seat ${i}</option>`)].join('');
  $('#side').innerHTML = `
    ${banner}<div id="message" class="banner err" hidden></div>
    ${snap.error ? `<div class="banner err">${esc(snap.error)}</div>` : ''}
    <div class="panel"><ul class="seats">${seats}</ul>
      <div class="controls" style="margin-top:.5em">
        ${snap.replay ? '' : `<button type="button" id="undo" ${snap.undoable ? '' : 'disabled'}>Undo</button>`}
        ${watching && !snap.replay && ownerToken() ? `<button type="button" id="pause">${live.paused ? 'Resume' : 'Pause'}</button><button type="button" id="step" ${live.paused ? '' : 'disabled'}>Step</button>
          <label class="hint">pause <select id="speed">${[0, 100, 250, 500, 1000, 2000].map((d) => `<option value="${d}" ${live.delay_ms === d ? 'selected' : ''}>${d} ms</option>`).join('')}</select></label>` : ''}
        <button type="button" id="rules-button" title="the rules of this game (r)">Rules</button>
        <a href="/api/matches/${M.id}/record" download><button type="button">Record</button></a>
        <label class="hint">view <select id="viewer">${viewers}</select></label>
        ${snap.seats.some((x) => x.human) && !snap.replay ? `<label class="hint" title="how long each of the other players' moves stays on the board before the next is shown (this browser only)">others' moves <select id="pace">${[[0, 'at once'], [500, '0.5 s each'], [1000, '1 s each'], [2000, '2 s each']].map(([ms, t]) => `<option value="${ms}" ${M.pace === ms ? 'selected' : ''}>${t}</option>`).join('')}</select></label>` : ''}
        ${snap.result && !snap.replay && Object.keys(tokens()).length ? '<button type="button" id="rematch" title="a new game with the same players, each moved one seat on (two players: sides swapped)">Play again, seats swapped</button>' : ''}
        ${mayResign(snap) ? `<button type="button" id="resign" class="${M.resigning ? 'danger' : ''}" title="give up this game: you score nothing">${M.resigning ? 'Resign? Click again' : 'Resign'}</button>` : ''}
        ${seatToken() && !snap.result && !snap.replay ? '<button type="button" id="rotate" title="a new token for your seat: anywhere else that holds this seat loses it">New token</button>' : ''}
      </div>
      ${invites()}
    </div>
    <div class="panel">
      <div class="controls"><button type="button" id="first" title="first ply (Home)">«</button><button type="button" id="prev" title="previous ply (←)">‹</button><button type="button" id="next" title="next ply (→)">›</button><button type="button" id="last" title="latest ply (End)">»</button>
      <span class="hint">${M.browsing === null ? 'live' : `ply ${snap.ply} / ${live.plies}`}</span></div>
      <ol class="moves" id="moves">${log}</ol>
    </div>
    <div class="panel">
      <div class="controls"><input id="advisor" value="${esc(M.advisor || 'mcts:iters=5000')}" aria-label="analysis agent"><button type="button" id="analyse">Analyse</button></div>
      <div id="analysis" class="hint">${M.analysis ? analysisText(M.analysis) : 'ask any agent spec for its move here (h)'}</div>
    </div>`;
  const moves = $('#moves');
  if (moves) moves.scrollTop = moves.scrollHeight;
  const on = (id, f) => { const el = $('#' + id); if (el) el.addEventListener('click', f); };
  on('undo', undo);
  on('pause', () => control({ paused: !live.paused }));
  on('step', () => control({ step: true }));
  on('first', () => browse(0));
  on('prev', () => browse((M.browsing ?? live.plies) - 1));
  on('next', () => browse((M.browsing ?? live.plies) + 1));
  on('last', () => browse(null));
  on('analyse', analyse);
  on('rotate', rotate);
  on('rematch', rematch);
  on('resign', resign);
  on('rules-button', () => showRules(snap.game));
  document.querySelectorAll('button.reissue').forEach((b) => b.addEventListener('click', () => reissue(Number(b.dataset.seat))));
  const paceEl = $('#pace');
  if (paceEl) paceEl.addEventListener('change', () => { M.pace = Number(paceEl.value); localStorage.setItem('meeple.pace', String(M.pace)); });
  const speed = $('#speed');
  if (speed) speed.addEventListener('change', () => control({ delay_ms: Number(speed.value) }));
  $('#viewer').value = M.viewer === null ? 'spectator' : String(M.viewer);
  $('#viewer').addEventListener('change', (ev) => {
    const v = ev.target.value;
    const url = new URL(location.href);
    url.searchParams.set('viewer', v);
    history.replaceState(null, '', url);
    M.viewer = v === 'spectator' ? null : Number(v);
    M.sel = [];
    refresh();
    if (!snap.replay) listen();
  });
  document.querySelectorAll('button.copy').forEach((b) => b.addEventListener('click', () => navigator.clipboard && navigator.clipboard.writeText(b.dataset.url)));
  document.querySelectorAll('#moves li').forEach((li) => li.addEventListener('click', () => browse(Number(li.dataset.ply))));
}

// The rules card of a game in this setting (its options change the rules: Catan's trading,
// Santorini's gods), from the server.
async function showRules(spec) {
  try {
    const info = await api('GET', '/api/game?spec=' + encodeURIComponent(spec));
    $('#rules-title').textContent = `Rules: ${info.name}`;
    $('#rules-body').innerHTML = (info.rules || []).map((sec) => `<h3>${esc(sec.heading)}</h3><ul>${sec.lines.map((l) => `<li>${esc(l)}</li>`).join('')}</ul>`).join('') || '<p>No rules card for this game.</p>';
    $('#rules').hidden = false;
    $('#rules-close').focus();
  } catch (e) {
    showError(e.message);
  }
}

// A person may give up a game of two, or one where nobody else plays on (the server says the
// same): the first click asks, the second resigns.
function mayResign(snap) {
  if (!seatToken() || snap.result || snap.replay || M.browsing !== null || !snap.seats[M.viewer] || !snap.seats[M.viewer].human) return false;
  return snap.seats.length <= 2 || !snap.seats.some((s, i) => i !== M.viewer && s.human);
}

async function resign() {
  if (!M.resigning) {
    M.resigning = true;
    renderSide();
    setTimeout(() => { if (M.resigning) { M.resigning = false; renderSide(); } }, 4000);
    return;
  }
  M.resigning = false;
  try {
    await api('POST', `/api/matches/${M.id}/resign`, {}, seatToken());
    M.sel = [];
    await refresh();
  } catch (e) {
    showError(e.message);
  }
}

// The invitations of the seats nobody has claimed yet, for whoever created the match to send;
// the owner can issue a seat a new one (the old link stops working).
function invites() {
  const h = held(M.id);
  const snap = M.snap;
  if (!snap || snap.result || snap.replay) return '';
  const open = snap.seats.map((s, i) => [s, i]).filter(([s, i]) => s.human && !s.seated && !tokenFor(i));
  if (!open.length) return '';
  const links = Object.fromEntries((h.invites || []).map((s) => [s.seat, s.join]));
  return `<div class="invites"><p class="hint">Waiting for ${open.length > 1 ? 'players' : 'a player'}: send each the link of their seat. Opening it gives them the seat; nobody else can then play it or see its hidden cards.</p>${open.map(([, i]) => {
    const url = links[i] ? new URL(links[i], location.href).href : '';
    return `<div class="controls"><span>seat ${i}</span>${url ? `<input readonly class="join" data-seat="${i}" value="${esc(url)}" aria-label="join link for seat ${i}"><button type="button" class="copy" data-url="${esc(url)}">Copy</button>` : '<span class="hint">its link is with whoever created the match</span>'}${h.owner ? `<button type="button" class="reissue" data-seat="${i}" title="the old link stops working">New link</button>` : ''}</div>`;
  }).join('')}</div>`;
}

async function reissue(seat) {
  try {
    const made = await api('POST', `/api/matches/${M.id}/invite`, { seat }, ownerToken());
    const others = (held(M.id).invites || []).filter((s) => s.seat !== seat);
    hold(M.id, { invites: [...others, made] });
    renderSide();
  } catch (e) {
    showError(e.message);
  }
}

// A new token for this seat: any other device or tab holding the old one loses the seat.
// The same game again, every player moved one seat on (two players swap sides); a new deal.
async function rematch() {
  const snap = M.snap;
  const n = snap.seats.length;
  const seats = snap.seats.map((_, i) => snap.seats[(i + n - 1) % n].spec);
  const play = Object.keys(tokens()).map((s) => (Number(s) + 1) % n);
  await startMatch({ game: snap.game, seats, play, move_time_ms: snap.move_time_ms }, null, held(M.id).level);
}

async function rotate() {
  const seat = M.viewer;
  try {
    const made = await api('POST', `/api/matches/${M.id}/token`, {}, seatToken());
    hold(M.id, { tokens: { ...tokens(), [seat]: made.token } });
    showError(`Seat ${seat} has a new token; anywhere else that held it has lost the seat.`);
    listen();
  } catch (e) {
    showError(e.message);
  }
}

// The advice in words: who it is for, the move, how the search rates it, and the line it
// expects after it; the table of the moves it weighed folded away.
function analysisText(a) {
  if (a.error) return `<span class="error">${esc(a.agent)}: ${esc(a.error)}</span>`;
  const snap = M.snap;
  const who = (p) => (snap && snap.seats[p] ? capital(seatName(snap, p)) : `Seat ${p}`);
  const many = snap && snap.seats.length > 2;
  const rated = a.value === null || a.value === undefined ? ''
    : ` <span id="advice-value">— ${many ? 'a share of the win' : 'a chance to win'} of ${Math.round(100 * a.value)}% as the search sees it</span>`;
  const then = (a.line || []).slice(1);
  const line = then.length ? `<div id="advice-line">Then: ${then.map((l) => `${esc(who(l.player))} ${esc(l.words || l.text)}`).join('; ')}${then.length >= 11 ? '…' : ''}</div>` : '';
  const top = (a.top || []).length ? `<details><summary class="hint">the moves it weighed</summary><table><tr><th>move</th><th>visits</th><th>value</th></tr>${a.top.map((m) => `<tr><td>${esc(m.text)}</td><td>${m.visits ?? ''}</td><td>${m.value === null || m.value === undefined ? '' : m.value.toFixed(3)}</td></tr>`).join('')}</table></details>` : '';
  const mover = a.mover === undefined ? '' : `For ${esc(who(a.mover).replace(/^You$/, 'you'))}: `;
  return `<div>${mover}<b id="advice">${esc(a.words || a.text)}</b>${rated}</div>${line}<div class="hint">${esc(a.agent)}, ${a.ms.toFixed(0)} ms, at ply ${a.ply}</div>${top}`;
}

// The advised move drawn on the board: an arrow through the squares its clicks name (a worker
// to where it goes and where it builds), a ring where it names one.
function drawAdvice(a) {
  const board = $('#board svg');
  if (!board || !a || a.error || !a.path || !board.getScreenCTM()) return;
  const inverse = board.getScreenCTM().inverse();
  const points = [];
  for (const t of a.path) {
    const el = [...board.querySelectorAll('[data-t]')].find((e) => e.dataset.t.split(' ').includes(t));
    if (!el) continue;
    const r = el.getBoundingClientRect();
    const p = board.createSVGPoint();
    p.x = r.x + r.width / 2;
    p.y = r.y + r.height / 2;
    const q = p.matrixTransform(inverse);
    const last = points[points.length - 1];
    if (!last || Math.hypot(last.x - q.x, last.y - q.y) > 1) points.push({ x: q.x, y: q.y, r: Math.max(6, Math.min(r.width, r.height) * Math.abs(inverse.a) * 0.42) });
  }
  if (!points.length) return;
  const ns = 'http://www.w3.org/2000/svg';
  const g = document.createElementNS(ns, 'g');
  g.setAttribute('class', 'advice');
  g.setAttribute('pointer-events', 'none');
  let body = '<defs><marker id="advice-head" viewBox="0 0 10 10" refX="7" refY="5" markerWidth="5" markerHeight="5" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#d6249f"/></marker></defs>';
  body += `<circle cx="${points[0].x}" cy="${points[0].y}" r="${points[0].r}" fill="none" stroke="#d6249f" stroke-width="4"/>`;
  for (let i = 1; i < points.length; i++) {
    const [p, q] = [points[i - 1], points[i]];
    const d = Math.hypot(q.x - p.x, q.y - p.y) || 1;
    const ux = (q.x - p.x) / d, uy = (q.y - p.y) / d;
    body += `<line x1="${p.x + ux * p.r}" y1="${p.y + uy * p.r}" x2="${q.x - ux * q.r * 0.6}" y2="${q.y - uy * q.r * 0.6}" stroke="#d6249f" stroke-width="5" stroke-linecap="round" marker-end="url(#advice-head)"/>`;
  }
  g.innerHTML = body;
  board.appendChild(g);
}

async function analyse() {
  const agent = ($('#advisor') && $('#advisor').value.trim()) || 'mcts:iters=5000';
  M.advisor = agent;
  const el = $('#analysis');
  if (el) el.textContent = 'thinking…';
  try {
    M.analysis = await api('POST', `/api/matches/${M.id}/analysis`, { agent, ply: M.snap.ply, viewer: M.viewer, time_ms: 2000 }, seatToken());
  } catch (e) {
    M.analysis = { agent, error: e.message };
  }
  render();
}

async function undo() {
  try {
    await api('POST', `/api/matches/${M.id}/undo`, { ply: M.snap.ply }, seatToken());
    M.sel = [];
    M.browsing = null;
    await refresh();
  } catch (e) {
    showError(e.message);
  }
}

async function control(body) {
  try {
    await api('POST', `/api/matches/${M.id}/control`, body, ownerToken());
    await refresh();
  } catch (e) {
    showError(e.message);
  }
}

async function browse(ply) {
  const plies = (M.latest && M.browsing !== null ? M.latest : M.snap).plies;
  if (ply === null || (!M.snap.replay && ply >= plies)) {
    if (M.snap.replay) ply = plies; else { M.browsing = null; M.latest = null; M.sel = []; return refresh(); }
  }
  M.browsing = Math.max(0, Math.min(plies, ply));
  M.sel = [];
  await refresh();
}

// ---------------------------------------------------------------- boards

function seatColour(game, i) {
  if (game === 'cathedral') return ['#e8d3a0', '#5b3a21'][i] || '#888';
  return PLAYER_COLOURS[i % PLAYER_COLOURS.length];
}

function svg(w, h, body, extraAttrs = '') {
  return `<svg viewBox="0 0 ${w} ${h}" xmlns="http://www.w3.org/2000/svg" role="img" ${extraAttrs}>${body}</svg>`;
}

const colName = (c) => String.fromCharCode(97 + c);

function renderText(view) {
  return { board: `<pre class="text">${esc(view.text ?? JSON.stringify(view, null, 1))}</pre>` };
}

function renderTicTacToe(view) {
  const S = 100;
  let b = '';
  view.cells.forEach((owner, i) => {
    const x = (i % 3) * S, y = Math.floor(i / 3) * S;
    const win = view.win_line && view.win_line.includes(i);
    b += `<rect class="cell" data-t="c:${i}" x="${x + 3}" y="${y + 3}" width="${S - 6}" height="${S - 6}" rx="6" fill="${win ? '#fff0b3' : '#f4f1ea'}" stroke="#ccc"/>`;
    if (owner === 0) b += `<path d="M${x + 25} ${y + 25}L${x + 75} ${y + 75}M${x + 75} ${y + 25}L${x + 25} ${y + 75}" stroke="${PLAYER_COLOURS[0]}" stroke-width="10" stroke-linecap="round"/>`;
    if (owner === 1) b += `<circle cx="${x + 50}" cy="${y + 50}" r="27" fill="none" stroke="${PLAYER_COLOURS[1]}" stroke-width="10"/>`;
  });
  return { board: svg(300, 300, b, 'aria-label="tic-tac-toe board"') };
}

function renderConnect4(view) {
  const S = 60, W = view.cols * S, H = view.rows * S;
  const win = new Set((view.win_line || []).map(([r, c]) => `${r},${c}`));
  let b = `<rect x="0" y="0" width="${W}" height="${H + 24}" fill="#2b59a3" rx="10"/>`;
  for (let c = 0; c < view.cols; c++) {
    b += `<rect class="column" data-t="c:${c}" x="${c * S}" y="0" width="${S}" height="${H}" fill="transparent"/>`;
    b += `<text x="${c * S + S / 2}" y="${H + 18}" text-anchor="middle" fill="#fff" font-size="14">${c + 1}</text>`;
    for (let r = 0; r < view.rows; r++) {
      const o = view.cells[r][c];
      const fill = o === null ? '#f6f3ee' : PLAYER_COLOURS[o];
      b += `<circle cx="${c * S + S / 2}" cy="${r * S + S / 2}" r="${S * 0.4}" fill="${fill}" ${win.has(`${r},${c}`) ? 'stroke="#fff" stroke-width="5"' : ''} pointer-events="none"/>`;
    }
  }
  return { board: svg(W, H + 24, b, 'aria-label="connect four board"') + '<style>.column.hl{fill:rgba(255,255,255,.18)}</style>' };
}

function renderSantorini(view) {
  const S = 90, N = view.size, M0 = 24;
  const name = (i) => `${colName(i % N)}${Math.floor(i / N) + 1}`;
  let b = '';
  for (let i = 0; i < N * N; i++) {
    const x = M0 + (i % N) * S, y = M0 + (N - 1 - Math.floor(i / N)) * S, n = name(i);
    b += `<rect class="cell" data-t="c:${n} w:${n} m:${n} b:${n} dome:${n}" x="${x + 2}" y="${y + 2}" width="${S - 4}" height="${S - 4}" fill="#9cc77a" stroke="#6d8f56"/>`;
    const shades = ['#f2efe6', '#dedad0', '#c9c4b8'];
    for (let l = 0; l < view.height[i]; l++) {
      const inset = 8 + l * 10;
      b += `<rect x="${x + inset}" y="${y + inset}" width="${S - 2 * inset}" height="${S - 2 * inset}" fill="${shades[l]}" stroke="#999" pointer-events="none"/>`;
    }
    if (view.dome[i]) b += `<circle cx="${x + S / 2}" cy="${y + S / 2}" r="${S * 0.2}" fill="#2d5fa8" pointer-events="none"/>`;
    if (view.height[i]) b += `<text x="${x + 8}" y="${y + S - 8}" font-size="13" fill="#555">${view.height[i]}</text>`;
  }
  const step = view.step || null;
  const centre = (c) => [M0 + (c % N) * S + S / 2, M0 + (N - 1 - Math.floor(c / N)) * S + S / 2];
  // With gods: the cell of this turn's first build, ringed for Demeter's and Hephaestus's second.
  if (step && step.built !== null) {
    const [x, y] = centre(step.built);
    b += `<rect class="built" x="${x - S / 2 + 4}" y="${y - S / 2 + 4}" width="${S - 8}" height="${S - 8}" fill="none" stroke="#d08a00" stroke-width="4" stroke-dasharray="8 5" pointer-events="none"/>`;
  }
  view.workers.forEach((ws, p) => ws.forEach((c, k) => {
    if (c === null) return;
    const [x, y] = centre(c);
    const acting = step && step.active === c && !step.hermes;
    b += `<circle cx="${x}" cy="${y}" r="${S * 0.2}" fill="${PLAYER_COLOURS[p]}" stroke="${acting ? '#ffd34d' : '#222'}" stroke-width="${acting ? 5 : 2}" pointer-events="none"/><text x="${x}" y="${y + 5}" text-anchor="middle" font-size="15" fill="#fff" font-weight="700">${'AB'[p]}${k + 1}</text>`;
  }));
  for (let c = 0; c < N; c++) {
    b += `<text x="${M0 + c * S + S / 2}" y="16" text-anchor="middle" font-size="14">${colName(c)}</text><text x="8" y="${M0 + (N - 1 - c) * S + S / 2 + 5}" font-size="14">${c + 1}</text>`;
  }
  const supply = view.supply ? `<p>Blocks left: level 1 ${view.supply[0]}, level 2 ${view.supply[1]}, level 3 ${view.supply[2]}, domes ${view.supply[3]}</p>` : '';
  const hint = view.phase === 'place' ? 'Place your workers.' : step
    ? 'A turn is played in steps: click a worker and where it moves, then where it builds. A power\'s optional step is a click on the board too: where a square could take two (move there or build there first, a block or a dome, move again or build), the bar below the board says which a click makes. A second build is skipped with its button.'
    : 'Click a worker, where it moves, then where it builds.';
  const moved = step && step.active !== null;
  const modes = { m: moved ? 'moves again' : 'moves', b: step && !moved ? 'builds first (then moves, not up)' : 'builds a block', dome: 'builds a dome' };
  const labels = { 'btn:end': 'Skip the second build: end the turn' };
  // The click a square makes unless the bar says otherwise: the step every turn has (a move, then
  // a build), the power's optional one a click away.
  const mode = moved ? 'b' : 'm';
  const gods = step ? `<div class="gods">${step.gods.map((g, p) => `<div class="god" id="god-${p}" style="border-color:${PLAYER_COLOURS[p]}"><b>${g ? esc(g.name) : 'No power'}</b> <span class="hint">seat ${p} (${'AB'[p]})</span><div>${g ? esc(g.power) : 'plays by the base rules'}</div></div>`).join('')}</div>${step.athena_block ? '<p class="banner" id="athena-block">Athena moved up last turn: no worker may move up this turn.</p>' : ''}` : '';
  return { board: svg(M0 + N * S + 4, M0 + N * S + 4, b, 'aria-label="santorini board"'), extra: `${gods}<p class="hint">${hint}</p>${supply}`, modes, labels, mode };
}

function shapeSvg(cells, colour, unit = 10) {
  const w = Math.max(...cells.map((c) => c[1])) + 1, h = Math.max(...cells.map((c) => c[0])) + 1;
  return svg(w * unit, h * unit, cells.map(([r, c]) => `<rect x="${c * unit}" y="${r * unit}" width="${unit}" height="${unit}" fill="${colour}" stroke="#333" stroke-width="1"/>`).join(''), `style="height:${Math.max(1.2, h * 0.9)}em"`);
}

function renderCathedral(view, snap) {
  const N = view.size, S = 48, M0 = 22;
  const fills = ['#e8d3a0', '#5b3a21', '#8a8f99'];
  const terr = ['rgba(232,211,160,.45)', 'rgba(91,58,33,.35)'];
  const name = (i) => `${colName(i % N)}${Math.floor(i / N) + 1}`;
  let b = '';
  for (let i = 0; i < N * N; i++) {
    const x = M0 + (i % N) * S, y = M0 + Math.floor(i / N) * S;
    const o = view.owner[i];
    const fill = o !== null ? fills[o] : view.territory[i] !== null ? terr[view.territory[i]] : '#f4f1ea';
    b += `<rect class="cell" data-t="c:${name(i)}" data-i="${i}" x="${x}" y="${y}" width="${S}" height="${S}" fill="${fill}" stroke="#ccc"/>`;
  }
  // Outline each building: a thick line wherever neighbouring squares belong to different pieces.
  for (let i = 0; i < N * N; i++) {
    if (view.piece[i] === null) continue;
    const r = Math.floor(i / N), c = i % N, x = M0 + c * S, y = M0 + r * S;
    const other = (j, ok) => !ok || view.piece[j] !== view.piece[i];
    if (other(i - N, r > 0)) b += `<line x1="${x}" y1="${y}" x2="${x + S}" y2="${y}" stroke="#111" stroke-width="3" pointer-events="none"/>`;
    if (other(i + N, r < N - 1)) b += `<line x1="${x}" y1="${y + S}" x2="${x + S}" y2="${y + S}" stroke="#111" stroke-width="3" pointer-events="none"/>`;
    if (other(i - 1, c > 0)) b += `<line x1="${x}" y1="${y}" x2="${x}" y2="${y + S}" stroke="#111" stroke-width="3" pointer-events="none"/>`;
    if (other(i + 1, c < N - 1)) b += `<line x1="${x + S}" y1="${y}" x2="${x + S}" y2="${y + S}" stroke="#111" stroke-width="3" pointer-events="none"/>`;
  }
  for (let c = 0; c < N; c++) {
    b += `<text x="${M0 + c * S + S / 2}" y="15" text-anchor="middle" font-size="13">${colName(c)}</text><text x="4" y="${M0 + c * S + S / 2 + 5}" font-size="13">${c + 1}</text>`;
  }
  b += `<g id="preview"></g>`;
  // Pieces in hand; the mover's, and the orientations of the chosen one, are click targets.
  const mover = snap.turn.player;
  const chosen = M.sel[0] && M.sel[0].startsWith('p:') ? M.sel[0].slice(2) : null;
  let extra = view.hands.map((h, p) => `<div><b>${p === 0 ? 'Light' : 'Dark'}</b> · ${h.squares} squares in hand<div class="pieces">${h.pieces.map((pc) =>
    `<span class="piece ${pc.count ? '' : 'none'}" ${p === mover ? `data-t="p:${pc.name}"` : ''}>${shapeSvg(pc.shapes[0], fills[p])}${esc(pc.name)}${pc.count > 1 ? ' ×' + pc.count : ''}</span>`).join('')}${
    p === mover && view.cathedral_due ? `<span class="piece" data-t="p:cathedral">${shapeSvg(view.cathedral_shapes[0], fills[2])}cathedral</span>` : ''}</div></div>`).join('');
  if (chosen) {
    const shapes = chosen === 'cathedral' ? view.cathedral_shapes : (view.hands[mover].pieces.find((pc) => pc.name === chosen) || { shapes: [] }).shapes;
    if (shapes.length > 1) extra += `<div><b>Orientation</b><div class="pieces">${shapes.map((s, k) => `<span class="piece" data-t="r:${k}">${shapeSvg(s, chosen === 'cathedral' ? fills[2] : fills[mover])}${k}</span>`).join('')}</div></div>`;
  }
  const hover = (target, sel) => {
    const g = document.getElementById('preview');
    if (!g || !target.startsWith('c:') || !chosen) return;
    const shapes = chosen === 'cathedral' ? view.cathedral_shapes : view.hands[mover].pieces.find((pc) => pc.name === chosen).shapes;
    const k = sel.length > 1 && sel[1].startsWith('r:') ? Number(sel[1].slice(2)) : 0;
    const shape = shapes[k];
    const col = target.charCodeAt(2) - 97, row = Number(target.slice(3)) - 1;
    const [r0, c0] = shape[0];
    g.innerHTML = shape.map(([r, c]) => `<rect class="preview" x="${M0 + (col + c - c0) * S}" y="${M0 + (row + r - r0) * S}" width="${S}" height="${S}"/>`).join('');
  };
  return { board: svg(M0 + N * S + 4, M0 + N * S + 4, b, 'aria-label="cathedral board" style="max-height:60vh"'), extra: `<div class="panel">${extra}</div>`, hover };
}

const DIE_COLOURS = { R: '#d33b3b', Y: '#e0b614', G: '#3f9d4a', B: '#2f6fbd', P: '#8a4fb0' };

function dieHtml(d, target) {
  return `<span class="die" style="background:${DIE_COLOURS[d[0]]}" ${target ? `data-t="${target}"` : ''} title="${d}">${d[1]}</span>`;
}

function renderSagrada(view, snap) {
  const mover = snap.turn.kind === 'player' ? snap.turn.player : null;
  const S = 44, G = 16, Wd = 5 * S, Hd = 4 * S + 40;
  const n = view.players.length;
  const perRow = Math.min(n, 2);
  let b = '';
  view.players.forEach((pl, p) => {
    const ox = (p % perRow) * (Wd + G), oy = Math.floor(p / perRow) * (Hd + G);
    b += `<text x="${ox}" y="${oy + 13}" font-size="13" font-weight="700" fill="${PLAYER_COLOURS[p]}">${p}: ${esc(pl.pattern || 'choosing a window')}</text>`;
    b += `<text x="${ox}" y="${oy + 28}" font-size="11" fill="#555">${pl.tokens} tokens${pl.score !== null ? ` · ${pl.score} points` : ''}${pl.private ? ` · private ${esc(pl.private)}` : ''}</text>`;
    for (let i = 0; i < 20; i++) {
      const x = ox + (i % 5) * S, y = oy + 34 + Math.floor(i / 5) * S;
      const r = pl.restrictions[i], d = pl.dice[i];
      const target = p === mover ? `data-t="c:${colName(i % 5)}${Math.floor(i / 5) + 1}"` : '';
      const fill = r && DIE_COLOURS[r] ? DIE_COLOURS[r] + '55' : '#f4f1ea';
      // Every window's spaces carry their name and owner, so another player's last die is
      // marked on that player's window, not on the one whose spaces are clicked now.
      b += `<rect class="cell" ${target} data-m="c:${colName(i % 5)}${Math.floor(i / 5) + 1}" data-owner="${p}" x="${x + 1}" y="${y + 1}" width="${S - 2}" height="${S - 2}" fill="${fill}" stroke="#bbb"/>`;
      if (r && !DIE_COLOURS[r]) b += `<text x="${x + S / 2}" y="${y + S / 2 + 6}" text-anchor="middle" font-size="17" fill="#888">${r}</text>`;
      if (d) b += `<rect x="${x + 5}" y="${y + 5}" width="${S - 10}" height="${S - 10}" rx="5" fill="${DIE_COLOURS[d[0]]}" pointer-events="none"/><text x="${x + S / 2}" y="${y + S / 2 + 6}" text-anchor="middle" font-size="18" fill="#fff" font-weight="700">${d[1]}</text>`;
    }
  });
  const rows = Math.ceil(n / perRow);
  const board = svg(perRow * (Wd + G), rows * (Hd + G), b, 'aria-label="sagrada windows"');
  const me = M.viewer !== null ? view.players[M.viewer] : null;
  // The windows to choose from, drawn as they will look: colours and shades, a click each.
  const offerWindow = (o, k) => {
    const C = 24;
    let w = `<text x="0" y="10" font-size="10" font-weight="700">${esc(o.name)}</text><text x="0" y="22" font-size="10" fill="#555">${o.tokens} tokens</text>`;
    o.rows.forEach((row, r) => [...row].forEach((ch, c) => {
      const x = c * C, y = 27 + r * C;
      w += `<rect x="${x + 1}" y="${y + 1}" width="${C - 2}" height="${C - 2}" fill="${DIE_COLOURS[ch] ? DIE_COLOURS[ch] + '99' : '#f4f1ea'}" stroke="#bbb"/>`;
      if (/[1-6]/.test(ch)) w += `<text x="${x + C / 2}" y="${y + C / 2 + 5}" text-anchor="middle" font-size="13" fill="#666">${ch}</text>`;
    }));
    return `<svg class="window-offer" data-t="btn:window:${k + 1}" viewBox="-2 -2 ${5 * C + 4} ${27 + 4 * C + 4}" width="${5 * C + 4}" role="button" aria-label="window ${k + 1}: ${esc(o.name)}, ${o.tokens} tokens">${w}</svg>`;
  };
  const offers = me && me.offers ? `<div><b>Choose a window</b><div class="window-offers">${me.offers.map(offerWindow).join('')}</div></div>` : '';
  const extra = `<div class="panel">
    <div><b>Round ${Math.min(view.round, 10)}</b> of 10 · ${view.stage}${view.drafted ? ' · drafted' : ''}${view.tool_used ? ' · tool used' : ''}</div>
    <div><b>Draft pool</b> <div class="dice">${view.pool.map((d) => dieHtml(d, mover !== null ? `d:${d}` : '')).join('') || '<span class="hint">empty</span>'}</div></div>
    ${view.held ? `<div><b>Held die</b> ${dieHtml(view.held, `d:${view.held}`)}</div>` : ''}
    <div><b>Round track</b> <div class="dice">${view.track.map((d) => dieHtml(d, '')).join('') || '<span class="hint">empty</span>'}</div></div>
    <div><b>Tools</b><div class="card-list">${view.tools.map((t) => `<div class="tool" data-t="t:${t.key}"><b>${esc(t.name)}</b> (${t.cost})<br>${esc(t.text)}</div>`).join('')}</div></div>
    <div><b>Public objectives</b><div class="card-list">${view.objectives.map((o) => `<div class="tool"><b>${esc(o.name)}</b><br>${esc(o.text)}</div>`).join('')}</div></div>
    ${me && me.private ? `<div><b>Your private objective</b>: ${esc(me.private)}</div>` : ''}${offers}
  </div>`;
  return { board, extra };
}

const TERRAIN_COLOURS = { hills: '#c8643b', forest: '#2f7d3b', pasture: '#9ccc65', fields: '#f0c93f', mountains: '#8c8c8c', desert: '#e8d9a8' };

const CATAN_RESOURCE_COLOURS = { brick: '#c8643b', lumber: '#2f7d3b', wool: '#9ccc65', grain: '#f0c93f', ore: '#8c8c8c' };

// How far a harbour sits out to sea from its coast, in the hex grid's units.
const HARBOUR_OUT = 0.9;

function renderCatan(view, snap) {
  const size = 46, kx = size * Math.sqrt(3) / 2, ky = size / 2;
  const X = (gx) => 330 + gx * kx, Y = (gy) => 300 + gy * ky;
  const corners = [[0, -2], [1, -1], [1, 1], [0, 2], [-1, 1], [-1, -1]];
  let b = `<rect x="0" y="0" width="660" height="600" fill="#6fa8dc"/>`;
  view.hexes.forEach((h, i) => {
    const cx = 2 * h.q + h.r, cy = 3 * h.r;
    const pts = corners.map(([dx, dy]) => `${X(cx + dx)},${Y(cy + dy)}`).join(' ');
    b += `<polygon class="spot" data-t="h:${i}" points="${pts}" fill="${TERRAIN_COLOURS[h.terrain] || '#ddd'}" stroke="#f5e9c8" stroke-width="3"/>`;
    if (h.number) b += `<circle cx="${X(cx)}" cy="${Y(cy)}" r="15" fill="#fdf6e3" stroke="#444" pointer-events="none"/><text x="${X(cx)}" y="${Y(cy) + 5}" text-anchor="middle" font-size="15" font-weight="700" fill="${h.number === 6 || h.number === 8 ? '#c00' : '#222'}">${h.number}</text>`;
    b += `<text x="${X(cx)}" y="${Y(cy) - 20}" text-anchor="middle" font-size="9" fill="#333">H${i}</text>`;
    if (view.robber === i) {
      // The robber: a dark pawn on its hex, labelled.
      const rx = X(cx) + 24, ry = Y(cy) + 2;
      b += `<g id="robber" pointer-events="none"><circle cx="${rx}" cy="${ry - 12}" r="7" fill="#222"/><path d="M${rx - 9} ${ry + 12} Q${rx} ${ry - 14} ${rx + 9} ${ry + 12} Z" fill="#222"/><text x="${rx}" y="${ry + 24}" text-anchor="middle" font-size="9" fill="#fff" stroke="#222" stroke-width="2" paint-order="stroke">robber</text></g>`;
    }
  });
  // Corners around the robber's hex: a building there can be robbed (click it to choose).
  const rh = view.hexes[view.robber];
  const robberCorner = (gx, gy) => rh && corners.some(([dx, dy]) => 2 * rh.q + rh.r + dx === gx && 3 * rh.r + dy === gy);
  const vxy = view.geometry.vertex_xy;
  view.harbours.forEach((hb) => {
    const [a, c] = hb.vertices;
    const mx = (vxy[a][0] + vxy[c][0]) / 2, my = (vxy[a][1] + vxy[c][1]) / 2;
    const len = Math.hypot(mx, my) || 1;
    const ox = X(mx + (mx / len) * HARBOUR_OUT), oy = Y(my + (my / len) * HARBOUR_OUT);
    b += `<line x1="${X(vxy[a][0])}" y1="${Y(vxy[a][1])}" x2="${ox}" y2="${oy}" stroke="#fff" stroke-width="2"/><line x1="${X(vxy[c][0])}" y1="${Y(vxy[c][1])}" x2="${ox}" y2="${oy}" stroke="#fff" stroke-width="2"/>`;
    // A harbour's ratio on a tile of its resource's colour (white: any resource), named in full
    // in its tooltip: short enough that the sea around the island stays narrow.
    const any = hb.kind === '3:1';
    b += `<g><title>${esc(any ? '3:1 harbour: any 3 of a kind for 1' : `${hb.kind} harbour: 2 ${hb.kind} for 1`)}</title><rect x="${ox - 16}" y="${oy - 9}" width="32" height="18" rx="4" fill="${any ? '#fff' : CATAN_RESOURCE_COLOURS[hb.kind] || '#fff'}" stroke="#fff" stroke-width="1.5"/><text x="${ox}" y="${oy + 4}" text-anchor="middle" font-size="10" font-weight="700" fill="${any ? '#222' : '#fff'}" ${any ? '' : 'stroke="#0006" stroke-width="2" paint-order="stroke"'}>${any ? '3:1' : '2:1'}</text></g>`;
  });
  view.geometry.edge_vertices.forEach(([a, c], e) => {
    const owner = view.edges[e];
    const line = `x1="${X(vxy[a][0])}" y1="${Y(vxy[a][1])}" x2="${X(vxy[c][0])}" y2="${Y(vxy[c][1])}"`;
    if (owner !== null) b += `<line ${line} stroke="#222" stroke-width="9" stroke-linecap="round"/><line ${line} stroke="${PLAYER_COLOURS[owner]}" stroke-width="6" stroke-linecap="round"/>`;
    // A thin mark to highlight, and a wide transparent line to hit (at least 32 px on a phone).
    b += `<line class="spot" data-t="e:${e}" ${line} stroke="transparent" stroke-width="8" pointer-events="none"/><line class="spot hit" data-t="e:${e}" ${line} stroke="transparent" stroke-width="28"/>`;
  });
  vxy.forEach(([gx, gy], v) => {
    const o = view.vertices[v];
    if (o) {
      const c = PLAYER_COLOURS[o.owner];
      b += o.city ? `<rect x="${X(gx) - 10}" y="${Y(gy) - 10}" width="20" height="20" fill="${c}" stroke="#222" stroke-width="2" pointer-events="none"/>`
        : `<circle cx="${X(gx)}" cy="${Y(gy)}" r="8" fill="${c}" stroke="#222" stroke-width="2" pointer-events="none"/>`;
    }
    const rob = o && robberCorner(gx, gy) ? ` s:${o.owner}` : '';
    b += `<circle class="spot" data-t="v:${v}${rob}" cx="${X(gx)}" cy="${Y(gy)}" r="${rob ? 13 : 9}" fill="transparent" pointer-events="none"/><circle class="spot hit" data-t="v:${v}${rob}" cx="${X(gx)}" cy="${Y(gy)}" r="23" fill="transparent"/>`;
  });
  const cardsOf = (hand) => view.resources.map((r, k) => Array.from({ length: hand[k] }, () => `<span class="card" style="background:${CATAN_RESOURCE_COLOURS[r]}" title="${r}">${r}</span>`).join('')).join('');
  // At a table with people, another seat's hand is its count, as at a real table (what a careful
  // player could track from the log is the game's information model, not the page's to show);
  // watching agents, or once the game is over, every card.
  const counts = snap.seats.some((x) => x.human) && !snap.result && !snap.replay;
  const players = view.players.map((pl, p) => {
    const hand = (pl.hand && p === snap.viewer) || counts ? '' : (pl.hand ? view.resources.map((r, k) => `${r} ${pl.hand[k]}`).join(', ') : '');
    return `<div class="player-box" data-t="s:${p}" style="border-left:6px solid ${PLAYER_COLOURS[p]}"><b>seat ${p}</b>${view.current === p ? ' · to move' : ''} · ${pl.points} points · ${pl.cards} cards · ${pl.dev_cards} development · ${pl.knights} knights · road ${pl.road_length}${view.army === p ? ' · largest army' : ''}${view.road === p ? ' · longest road' : ''}${pl.discard ? ` · discards ${pl.discard}` : ''}
      <div class="hint">${p === snap.viewer && pl.hand ? 'your hand is shown above' : esc(hand)}${pl.unseen && !counts ? ` (+${pl.unseen} unseen)` : ''}${pl.dev && (p === snap.viewer || !counts) ? ' · cards: ' + pl.dev.map((d) => `${d.kind} ${d.count}${d.new ? ` (${d.new} new)` : ''}`).join(', ') : ''}</div></div>`;
  }).join('');
  const me = snap.viewer !== null && snap.viewer !== undefined ? view.players[snap.viewer] : null;
  const mine = me && me.hand ? `<div class="hand" id="hand"><b>Your hand</b> ${cardsOf(me.hand) || '<span class="hint">no cards</span>'}${me.dev && me.dev.length ? ` · ${me.dev.map((d) => `<span class="card dev">${esc(d.kind.replace(/_/g, ' '))}${d.count > 1 ? ' ×' + d.count : ''}${d.new ? ' (new)' : ''}</span>`).join('')}` : ''}</div>` : '';
  const dice = view.last_roll ? `<span class="dice" id="dice" title="the last roll">dice ${view.last_roll}</span>` : '<span class="dice">dice –</span>';
  const legend = `<div class="legend">${Object.entries({ hills: 'brick', forest: 'lumber', pasture: 'wool', fields: 'grain', mountains: 'ore', desert: 'nothing' }).map(([t, r]) => `<span><i style="background:${TERRAIN_COLOURS[t]}"></i>${t}: ${r}</span>`).join('')}</div>`;
  const trade = view.trade ? catanTrade(view, snap, cardsOf) : { html: '' };
  const extra = `<div class="panel">${mine}${trade.html}<div>${dice} · turn ${view.turns} · bank ${view.resources.map((r, k) => `${r} ${view.bank[k]}`).join(', ')} · development deck ${view.dev_deck} · ${view.win_points} points win</div>${legend}${players}</div>`;
  // The sea is cropped to the island and its harbours, so the board fills a phone's width.
  const xs = [], ys = [];
  vxy.forEach(([gx, gy]) => { xs.push(X(gx)); ys.push(Y(gy)); });
  view.harbours.forEach((hb) => {
    const [a, c] = hb.vertices;
    const mx = (vxy[a][0] + vxy[c][0]) / 2, my = (vxy[a][1] + vxy[c][1]) / 2;
    const len = Math.hypot(mx, my) || 1;
    xs.push(X(mx + (mx / len) * HARBOUR_OUT) - 17, X(mx + (mx / len) * HARBOUR_OUT) + 17);
    ys.push(Y(my + (my / len) * HARBOUR_OUT) - 10, Y(my + (my / len) * HARBOUR_OUT) + 10);
  });
  const [x0, x1, y0, y1] = [Math.min(...xs) - 24, Math.max(...xs) + 24, Math.min(...ys) - 24, Math.max(...ys) + 24];
  const board = `<svg viewBox="${x0} ${y0} ${x1 - x0} ${y1 - y0}" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="catan board">${b.replace('<rect x="0" y="0" width="660" height="600"', `<rect x="${x0}" y="${y0}" width="${x1 - x0}" height="${y1 - y0}"`)}</svg>`;
  // Corners and roads lie too close for both to be large: where both may be clicked, the bar
  // under the board says which a click on the board makes.
  return { board, extra, owns: ['btn:offer'], bind: trade.bind, apart: ['v', 'e'], modes: { v: 'a corner (settlement or city)', e: 'a road' }, mode: 'v' };
}

// Trading between players: the pending offer as a card (who offers what, each seat's answer,
// accept and decline for the seat asked, the accepters to trade with for the mover), and, on the
// mover's turn, a builder for a new offer from the cards to give and to get.
function catanTrade(view, snap, cardsOf) {
  const n = view.players.length, R = view.resources;
  const legal = M.browsing === null ? snap.legal || [] : [];
  const count = (side) => { const c = R.map(() => 0); side.split('+').forEach((r) => { const k = R.indexOf(r); if (k >= 0) c[k] += 1; }); return c; };
  let html = '';
  const o = view.trade.offer;
  if (o) {
    const order = Array.from({ length: n - 1 }, (_, k) => (o.from + 1 + k) % n);
    const at = o.responder === null ? n : order.indexOf(o.responder);
    const answer = (q, k) => o.accepted.includes(q) ? '<b class="yes">accepted</b>' : k < at ? '<span class="no">declined</span>' : q === o.responder ? '<i>answering…</i>' : '<span class="hint">to answer</span>';
    const has = (t) => legal.some((l) => l.path[0] === t);
    const buttons = [
      has('btn:accept') ? '<button type="button" data-t="btn:accept">Accept</button>' : '',
      has('btn:decline') ? '<button type="button" data-t="btn:decline">Decline</button>' : '',
      ...o.accepted.filter((q) => has(`btn:with:${q}`)).map((q) => `<button type="button" data-t="btn:with:${q}">Trade with seat ${q}</button>`),
      has('btn:withdraw') ? '<button type="button" data-t="btn:withdraw">Withdraw</button>' : '',
    ].join('');
    html += `<div class="offer-card" id="offer-card" style="border-left-color:${PLAYER_COLOURS[o.from]}">
      <div><b>Seat ${o.from} offers</b> ${cardsOf(o.give)} <b>for</b> ${cardsOf(o.get)}</div>
      <div class="answers">${order.map((q, k) => `<span data-seat="${q}">seat ${q}: ${answer(q, k)}</span>`).join(' · ')}</div>
      ${buttons ? `<div class="controls">${buttons}</div>` : ''}</div>`;
  }
  const offers = legal.filter((l) => l.path[0] === 'btn:offer').map((l) => ({ id: l.id, words: l.words, give: count(l.path[1].slice(5)), get: count(l.path[2].slice(4)) }));
  if (!offers.length) {
    if (view.trade.trades) html += `<div class="hint">${view.trade.trades} ${view.trade.trades === 1 ? 'trade' : 'trades'} between players so far</div>`;
    return { html };
  }
  // A half-built offer belongs to this match, this ply and this seat.
  const key = `${M.id}/${snap.ply}/${snap.viewer}`;
  if (!M.draft || M.draft.key !== key) M.draft = { key, give: R.map(() => 0), get: R.map(() => 0) };
  const d = M.draft;
  const same = (a, b) => a.every((v, k) => v === b[k]);
  const match = offers.find((f) => same(f.give, d.give) && same(f.get, d.get));
  const row = (side, label) => `<div class="trade-row"><span class="trade-label">${label}</span>${R.map((r, k) => `<span class="trade-pick"><span class="card" style="background:${CATAN_RESOURCE_COLOURS[r]}">${r}</span><button type="button" class="step" data-side="${side}" data-k="${k}" data-d="-1" aria-label="one ${r} fewer">−</button><b id="${side}-${r}">${d[side][k]}</b><button type="button" class="step" data-side="${side}" data-k="${k}" data-d="1" aria-label="one ${r} more">+</button></span>`).join('')}</div>`;
  const empty = d.give.every((v) => !v) && d.get.every((v) => !v);
  const why = match ? '' : empty ? 'choose the cards to give and to ask for' : 'not an offer you can make now: 1 for 1, 1 for 2 or 2 for 1 of different resources, from cards you hold, not one nobody took this turn';
  html += `<div class="trade-builder" id="trade-builder"><div><b>Offer a trade</b> <span class="hint">${view.trade.offers_left} ${view.trade.offers_left === 1 ? 'offer' : 'offers'} left this turn</span></div>
    ${row('give', 'you give')}${row('get', 'you ask for')}
    <div class="controls"><button type="button" id="make-offer" ${match ? `class="hl" data-id="${match.id}"` : 'disabled'}>${esc(match ? match.words : 'Offer')}</button> <span class="hint" id="offer-why">${esc(why)}</span></div></div>`;
  const bind = () => {
    document.querySelectorAll('#trade-builder button.step').forEach((b) => b.addEventListener('click', () => {
      const side = d[b.dataset.side], k = Number(b.dataset.k);
      side[k] = Math.max(0, Math.min(2, side[k] + Number(b.dataset.d)));
      render();
    }));
    const make = $('#make-offer');
    if (make && make.dataset.id) make.addEventListener('click', async () => { await submit(Number(make.dataset.id)); render(); });
  };
  return { html, bind };
}

const RENDERERS = { tictactoe: renderTicTacToe, connect4: renderConnect4, santorini: renderSantorini, cathedral: renderCathedral, sagrada: renderSagrada, catan: renderCatan };

// ---------------------------------------------------------------- navigation and keys

function go(url) {
  history.pushState(null, '', url);
  route();
}

function route() {
  leaveMatch();
  if (M.source) { M.source.close(); M.source = null; }
  M.id = null;
  M.snap = null;
  const m = location.pathname.match(/^\/m\/([A-Za-z0-9]+)$/);
  (m ? showMatch(m[1]) : showHome()).catch((e) => { $('#app').innerHTML = `<div class="panel error">${esc(e.message)}</div>`; });
}

window.addEventListener('popstate', route);
document.addEventListener('keydown', (ev) => {
  if (ev.target.matches('input, select, textarea')) return;
  const help = $('#help');
  if (ev.key === '?') { help.hidden = !help.hidden; return; }
  if (ev.key === 'Escape') { help.hidden = true; $('#rules').hidden = true; if (M.sel.length) { M.sel = []; render(); } return; }
  if (!M.snap || !location.pathname.startsWith('/m/')) return;
  const plies = (M.latest && M.browsing !== null ? M.latest : M.snap).plies;
  const at = M.browsing ?? plies;
  if (ev.key === 'ArrowLeft') { ev.preventDefault(); browse(at - 1); }
  else if (ev.key === 'ArrowRight') { ev.preventDefault(); browse(at + 1); }
  else if (ev.key === 'Home') { ev.preventDefault(); browse(0); }
  else if (ev.key === 'End') { ev.preventDefault(); browse(null); }
  else if (ev.key === ' ' && !M.snap.seats.some((s) => s.human) && !M.snap.replay) { ev.preventDefault(); control({ paused: !M.snap.paused }); }
  else if (ev.key === 'u') undo();
  else if (ev.key === 'h') analyse();
  else if (ev.key === 'r') showRules(M.snap.game);
});
$('#rules-close').addEventListener('click', () => { $('#rules').hidden = true; });
$('#rules').addEventListener('click', (ev) => { if (ev.target.id === 'rules') $('#rules').hidden = true; });
$('#help-button').addEventListener('click', () => { $('#help').hidden = false; });
$('#help-close').addEventListener('click', () => { $('#help').hidden = true; });
document.addEventListener('click', (ev) => {
  const a = ev.target.closest('a[href^="/"]');
  if (a && !a.hasAttribute('download') && !ev.ctrlKey && !ev.metaKey) { ev.preventDefault(); go(a.getAttribute('href')); }
});
route();
