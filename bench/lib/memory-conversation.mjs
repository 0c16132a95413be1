// The memory section's conversation: a long multi-session group chat, the same on every run for a
// seed, with facts planted in it (people's preferences, decisions, dates, numbers, places,
// commitments), each stated once, some restated in other words later and some updated later, buried
// in chat filler that mentions the same events and people without their values. One question per
// fact, asked at the end, with the value a reader must be served to answer it: the latest one.
//
// Every value is a string that occurs in no turn but its own fact's (checked when the conversation is
// built), so "the value appears in what the agent was served" means the agent was served that fact.
import { prng } from "./conversation.mjs";

/** The group's members: a name (what the agent sees before each message) and a @handle. */
export const PEOPLE = ["Ada", "Ben", "Chiara", "Dmitri", "Efua", "Farid", "Greta", "Hiro"].map((name) => ({
  id: `u-${name.toLowerCase()}`,
  name,
  username: name.toLowerCase(),
}));

const EVENTS = [
  "Lisbon offsite", "spring newsletter", "board pack", "Porto workshop", "climbing trip", "sponsor dinner", "hackathon",
  "customer summit", "team retreat", "product launch", "office move", "charity run", "book club", "design review",
  "hiring panel", "user study", "budget review", "photo shoot", "podcast recording", "volunteer day",
];

const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
const WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];
const SURNAMES = ["Almeida", "Ferreira", "Okafor", "Lindqvist", "Moreau", "Tanaka", "Kowalski", "Haddad", "Novak", "Ribeiro", "Castillo", "Brennan", "Sato", "Varga", "Mendes", "Oyelaran"];
const VENUE_KINDS = ["Quinta", "Casa", "Armazem", "Estudio", "Palacete", "Villa"];
const HOTEL_NAMES = ["Miradouro", "Atlantico", "Azulejo", "Bairro Alto", "Estrela", "Ribeira", "Corvo", "Sete Colinas", "Alfama", "Gaivota", "Jacaranda", "Cais"];
const AIRLINES = ["TP", "FR", "U2", "LH", "KL", "IB"];
const DRINKS = ["oolong", "rooibos", "hibiscus tea", "genmaicha", "yerba mate", "cortado", "chai", "kombucha", "matcha latte", "lemon verbena"];
const DRINK_STYLES = ["iced", "decaf", "unsweetened", "double", "oat milk", "smoked"];
const ALLERGENS = ["sesame", "shellfish", "peanut", "kiwi", "mustard", "celery", "lupin", "buckwheat"];
const TOWNS = ["Viseu", "Tromso", "Aarhus", "Kumasi", "Sapporo", "Tabriz", "Ljubljana", "Cuenca", "Galway", "Bergamo", "Oaxaca", "Kotor"];

const pick = (/** @type {() => number} */ random, /** @type {readonly string[]} */ list) => list[Math.floor(random() * list.length)] ?? list[0];
const int = (/** @type {() => number} */ random, /** @type {number} */ lo, /** @type {number} */ hi) => lo + Math.floor(random() * (hi - lo + 1));
const date = (/** @type {() => number} */ r) => `${pick(r, WEEKDAYS)} ${int(r, 1, 28)} ${pick(r, MONTHS)}`;
const time = (/** @type {() => number} */ r) => `${String(int(r, 7, 19)).padStart(2, "0")}:${pick(r, ["00", "15", "30", "45", "10", "40"])}`;
const ordinal = (/** @type {number} */ k) => `${k}${k % 10 === 1 && k !== 11 ? "st" : k % 10 === 2 && k !== 12 ? "nd" : k % 10 === 3 && k !== 13 ? "rd" : "th"}`;

/**
 * What can be planted: how a value is made, how it is stated, restated and updated, and the
 * question that asks for it. `{E}` is the event, `{P}` the person's name, `{h}` their handle, `{v}`
 * the value. A kind without `update` is a fact that does not change (a birthday).
 * @typedef {{ attribute: string, value: (r: () => number) => string, state: string, restate: string, update?: string, question: string }} FactKind
 */

/** @type {FactKind[]} */
const EVENT_FACTS = [
  { attribute: "date", value: date, state: "ok, decided: the {E} is on {v}, I'll send the invite", restate: "reminder that the {E} happens on {v}, put it in your calendars", update: "change of plan, the {E} moves to {v} because of a clash", question: "When is the {E}?" },
  { attribute: "venue", value: (r) => `${pick(r, VENUE_KINDS)} ${pick(r, SURNAMES)}`, state: "we booked {v} for the {E}, they have a garden and a projector", restate: "so the {E} will be at {v} then? the one with the garden", update: "the first place cancelled on us, the {E} is now at {v}", question: "Where is the {E} being held?" },
  { attribute: "budget", value: (r) => `${int(r, 1, 9)},${String(int(r, 0, 99) * 10).padStart(3, "0")} euros`, state: "finance signed off: {v} in total for the {E}", restate: "just to restate, we have {v} to spend on the {E}, no more", update: "budget news for the {E}: it got changed to {v}", question: "What is the budget for the {E}?" },
  { attribute: "headcount", value: (r) => `${int(r, 11, 190)} people`, state: "final headcount for the {E} is {v}", restate: "we're expecting {v} at the {E}, plan seating accordingly", update: "more signups came in, the {E} headcount is now {v}", question: "How many people are coming to the {E}?" },
  { attribute: "hotel", value: (r) => `Hotel ${pick(r, HOTEL_NAMES)} ${pick(r, ["Norte", "Sul", "Centro", "Mar", "Rio", "Praia"])}`, state: "I'll book everyone into {v} for the {E}", restate: "rooms for the {E} are at {v}, the confirmation is in the doc", update: "switching hotels for the {E}, we're now at {v}", question: "Which hotel are we staying at for the {E}?" },
  { attribute: "caterer", value: (r) => `${pick(r, SURNAMES)} ${pick(r, ["Kitchen", "Catering", "Cozinha", "Table", "Pantry"])}`, state: "we're going with {v} for the {E} catering", restate: "the food at the {E} is by {v}, they do vegan options too", update: "catering for the {E} changed to {v}, the other one was fully booked", question: "Who is catering the {E}?" },
  { attribute: "flight", value: (r) => `${pick(r, AIRLINES)}${int(r, 1000, 9899)}`, state: "flights for the {E}: we're all on {v}, I booked the group fare", restate: "the group flight for the {E} is {v}, don't book your own", update: "the airline rebooked us, the {E} flight is now {v}", question: "Which flight are we taking for the {E}?" },
  { attribute: "deadline", value: (r) => `${date(r)} at ${time(r)}`, state: "I commit to sending the {E} draft by {v}", restate: "the {E} draft is due {v}, as promised", update: "I need more time, the {E} draft will come by {v} instead", question: "When is the {E} draft due?" },
];

/** @type {FactKind[]} */
const PERSON_FACTS = [
  { attribute: "drink", value: (r) => `${pick(r, DRINK_STYLES)} ${pick(r, DRINKS)}`, state: "for the record, I only drink {v} now", restate: "get {v} for @{h}, that's the only thing they drink", update: "I've switched again, it's {v} for me these days", question: "What does {P} drink these days?" },
  { attribute: "allergy", value: (r) => `${pick(r, ALLERGENS)} allergy`, state: "for anyone ordering food: I have a {v}, please check the menus", restate: "careful with the order, @{h} has a {v}", question: "What allergy does {P} have?" },
  { attribute: "birthday", value: (r) => `the ${ordinal(int(r, 1, 28))} of ${pick(r, MONTHS)}`, state: "my birthday is {v}, cake is mandatory", restate: "@{h}'s birthday is {v}, who is organising the cake?", question: "When is {P}'s birthday?" },
  { attribute: "desk", value: (r) => `desk ${pick(r, ["K", "M", "R", "T", "W"])}${int(r, 10, 99)}`, state: "I moved floors, you can find me at {v} now", restate: "if you need @{h} in person, go to {v}", update: "moved again, I'm at {v} from today", question: "Where does {P} sit in the office?" },
  { attribute: "hometown", value: (r) => pick(r, TOWNS), state: "fun fact, I grew up in {v}", restate: "@{h} is from {v}, ask them for food tips", question: "Where did {P} grow up?" },
  { attribute: "holiday", value: (r) => { const m = pick(r, MONTHS); const d = int(r, 1, 14); return `from ${d} to ${d + int(r, 5, 14)} ${m}`; }, state: "I'm on holiday {v}, please don't schedule me", restate: "@{h} is away {v}, plan around it", update: "my holiday moved, I'm off {v} now", question: "When is {P} on holiday?" },
];

// Chat filler: what a group says around its decisions. It names the same events and people but
// never a value (no digits, none of the value words), so it competes for a reader's attention,
// not for the answer.
const FILLER = [
  "has anyone looked at the {E} doc yet? I left some comments",
  "the {E} thread is getting long, can we summarise it somewhere",
  "sorry, running late, the tram is stuck again",
  "ha, fair enough",
  "can someone share the link to the shared drive again? I lost it",
  "nice work on the slides @{h}, really clear",
  "the wifi on the third floor is down again",
  "I'll look into the {E} later today, swamped right now",
  "do we still need a separate call about the {E} or is this thread enough",
  "lunch anyone? the place around the corner has soup today",
  "+1 to what @{h} said",
  "reminder to fill in the expense form before the end of the month",
  "who has the key to the meeting room",
  "I think we're overthinking the {E}, let's keep it simple",
  "can we move the weekly sync, I have a dentist appointment",
  "the coffee machine is making that noise again",
  "does anyone know if the {E} needs sign-off from legal",
  "good morning all, hope everyone had a nice weekend",
  "quick question about the {E}: who owns the guest list",
  "I'm happy with either option for the {E}, whatever is easier",
  "@{h} did you get my message about the {E}?",
  "let's not forget to thank the volunteers after the {E}",
  "the printer is out of toner, I've ordered more",
  "I'll be offline for an hour, ping me if it's urgent",
  "we should write down the lessons from the {E} this time",
  "great photos from last week, thanks for sharing",
  "can we get an update on the {E} at the next sync",
  "I still think the earlier plan for the {E} was better, but fine",
  "agreed, let's park that for now",
  "thanks everyone, good discussion",
  "there's cake in the kitchen, help yourselves",
  "has the {E} budget spreadsheet moved? the old link is broken",
  "@{h} can you check the {E} checklist when you have a moment",
  "I'm heading out early today, back tomorrow morning",
  "does anyone have a spare charger",
  "the {E} planning doc needs an owner for each section",
  "we had the same problem last year, let me dig up the notes",
  "honestly the {E} is the thing I'm most looking forward to",
  "I'd rather decide this in person than over chat",
  "that's a good point, I hadn't thought of it",
];
const OPENERS = ["morning everyone", "hi all, back at it", "good morning team", "hello hello, new week", "morning, coffee first"];
const REPLIES = ["Noted, I've added that to the notes.", "Thanks, I'll keep that in mind.", "Got it. I'll remind the group closer to the date.", "Understood, I've updated the checklist.", "Sounds good, anything else I should track?"];

/**
 * @typedef {{ id: string, kind: "event" | "person", attribute: string, subject: string, question: string, values: string[], expected: string, restated: boolean, updated: boolean, turns: number[] }} Fact
 * @typedef {{ index: number, session: number, role: "user" | "assistant", author: { id: string, name: string, username: string } | null, text: string, fact: string | null }} MemoryTurn
 */

/**
 * Builds the conversation and its questions, deterministically from `seed`.
 * @param {{ seed: number, targetChars: number, sessionChars?: number, restateShare?: number, updateShare?: number }} options
 * @returns {{ turns: MemoryTurn[], facts: Fact[], sessions: number, chars: number }}
 */
export function memoryConversation({ seed, targetChars, sessionChars = 13_000, restateShare = 0.3, updateShare = 0.35 }) {
  const random = prng(seed);
  /** @type {Set<string>} */
  const used = new Set();
  // A value no other value contains or is contained in, so a match can only be its own fact's.
  const fresh = (/** @type {FactKind} */ kind) => {
    for (let attempt = 0; attempt < 1_000; attempt++) {
      const v = kind.value(random);
      if (![...used].some((u) => u.includes(v) || v.includes(u))) {
        used.add(v);
        return v;
      }
    }
    throw new Error(`no fresh value for ${kind.attribute}`);
  };
  const fill = (/** @type {string} */ template, /** @type {Record<string, string>} */ slots) => template.replace(/\{(\w)\}/g, (_, k) => slots[k] ?? "");

  /** @type {(Fact & { plan: { at: number, text: string, speaker: number }[] })[]} */
  const facts = [];
  const plant = (/** @type {"event" | "person"} */ kind, /** @type {FactKind} */ fk, /** @type {string} */ subject, /** @type {Record<string, string>} */ slots, /** @type {number} */ owner) => {
    const first = fresh(fk);
    const values = [first];
    const statedAt = random() * 0.8;
    const plan = [{ at: statedAt, text: fill(fk.state, { ...slots, v: first }), speaker: owner }];
    const updated = fk.update !== undefined && random() < updateShare;
    const updateAt = updated ? statedAt + (1 - statedAt) * (0.2 + random() * 0.75) : 1;
    const restated = random() < restateShare;
    if (restated) plan.push({ at: statedAt + (updateAt - statedAt) * (0.2 + random() * 0.7), text: fill(fk.restate, { ...slots, v: first }), speaker: (owner + 1 + int(random, 0, PEOPLE.length - 2)) % PEOPLE.length });
    if (updated && fk.update !== undefined) {
      const next = fresh(fk);
      values.push(next);
      plan.push({ at: updateAt, text: fill(fk.update, { ...slots, v: next }), speaker: owner });
    }
    facts.push({ id: `${kind}:${subject}:${fk.attribute}`, kind, attribute: fk.attribute, subject, question: fill(fk.question, slots), values, expected: values.at(-1) ?? first, restated, updated, turns: [], plan });
  };
  EVENTS.forEach((event, i) => {
    for (const fk of EVENT_FACTS) plant("event", fk, event, { E: event }, (i + EVENT_FACTS.indexOf(fk)) % PEOPLE.length);
  });
  PEOPLE.forEach((person, i) => {
    for (const fk of PERSON_FACTS) plant("person", fk, person.username, { P: person.name, h: person.username }, i);
  });

  // Fact turns in conversation order; filler between them until the conversation is long enough.
  const scheduled = facts.flatMap((f) => f.plan.map((p) => ({ ...p, fact: f }))).sort((a, b) => a.at - b.at);
  const meanFiller = 95;
  const expectedTurns = targetChars / meanFiller;
  /** @type {MemoryTurn[]} */
  const turns = [];
  let chars = 0;
  let session = 0;
  let sessionStart = 0;
  let next = 0;
  const push = (/** @type {Omit<MemoryTurn, "index" | "session">} */ turn) => {
    turns.push({ index: turns.length, session, ...turn });
    chars += turn.role === "user" ? `${turn.author?.name}: ${turn.text}`.length : turn.text.length;
  };
  const user = (/** @type {number} */ speaker, /** @type {string} */ text, /** @type {string | null} */ fact) => {
    const author = PEOPLE[speaker] ?? PEOPLE[0];
    push({ role: "user", author, text, fact });
    if (random() < 0.08) push({ role: "assistant", author: null, text: pick(random, REPLIES), fact: null });
  };
  while (chars < targetChars || next < scheduled.length) {
    if (chars - sessionStart >= sessionChars || turns.length === 0) {
      if (turns.length > 0) session += 1;
      sessionStart = chars;
      user(int(random, 0, PEOPLE.length - 1), pick(random, OPENERS), null);
    }
    const due = scheduled[next];
    if (due !== undefined && (due.at * expectedTurns <= turns.length || chars >= targetChars)) {
      next += 1;
      due.fact.turns.push(turns.length);
      user(due.speaker, due.text, due.fact.id);
      continue;
    }
    const sentences = 1 + (random() < 0.45 ? 1 : 0) + (random() < 0.15 ? 1 : 0);
    const parts = Array.from({ length: sentences }, () => fill(pick(random, FILLER), { E: pick(random, EVENTS), h: pick(random, PEOPLE.map((p) => p.username)) }));
    user(int(random, 0, PEOPLE.length - 1), parts.join(". "), null);
  }
  // The promise every score rests on: a value appears only in its own fact's turns.
  for (const fact of facts) {
    for (const value of fact.values) {
      const stray = turns.find((t) => t.text.includes(value) && t.fact !== fact.id);
      if (stray !== undefined) throw new Error(`value ${JSON.stringify(value)} of ${fact.id} also appears in turn ${stray.index}: ${stray.text}`);
    }
  }
  return { turns, facts: facts.map(({ plan: _plan, ...f }) => f), sessions: session + 1, chars };
}

/** A turn as the agent is sent it (`renderTurn`): `Name: text` for people, the text for its replies. */
export const renderedTurn = (/** @type {MemoryTurn} */ t) => (t.role === "user" ? `${t.author?.name}: ${t.text}` : t.text);

/**
 * The append events of a run of turns: a `source` per message, and a `proposal` + `delivery` per
 * reply of the agent (to the message before it).
 * @param {MemoryTurn[]} turns @param {string} agentId
 */
export function memoryEvents(turns, agentId) {
  /** @type {object[]} */
  const events = [];
  for (const t of turns) {
    if (t.role === "user") {
      events.push({ kind: "source", idempotencyKey: `mem-s-${t.index}`, body: { messageId: `mem-${t.index}`, author: t.author, text: t.text } });
      continue;
    }
    const id = `mem-p-${t.index}`;
    events.push(
      { kind: "proposal", idempotencyKey: id, body: { proposalId: id, agentId, replyToMessageId: `mem-${t.index - 1}`, text: t.text } },
      { kind: "delivery", idempotencyKey: `mem-d-${t.index}`, body: { status: "delivered", proposalId: id } },
    );
  }
  return events;
}
