// The demo conversation: a product team planning an offsite with their concierge bot in one
// Telegram group, over four sessions a few days apart. People speak through the Telegram webhook;
// the bot's replies are proposals and deliveries, posted as an external bot posts them.
//
// Two things happen late, after the part of the conversation they touch has been compacted:
// Ada edits the headcount she gave on Monday, and the delivery receipt of one of the bot's
// Wednesday replies arrives only at the end. Both become amendments of the covered history.

/** @typedef {{ from: "ada" | "bo" | "chen", text: string, key?: string }} PersonTurn */
/** @typedef {{ from: "bot", text: string, key?: string, lateDelivery?: boolean }} BotTurn */
/** @typedef {{ title: string, day: number, turns: (PersonTurn | BotTurn)[] }} Session */

export const PEOPLE = {
  ada: { id: 5100001, first_name: "Ada", last_name: "Okafor", username: "ada_ok" },
  bo: { id: 5100002, first_name: "Bo", username: "bo_builds" },
  chen: { id: 5100003, first_name: "Chen", last_name: "Wei" },
};

export const GROUP_TITLE = "Offsite 2027";

/** @type {Session[]} */
export const SESSIONS = [
  {
    title: "Monday: dates, headcount, budget",
    day: 0,
    turns: [
      { from: "ada", text: "Morning! Let's finally plan the spring offsite. I'd like three days in the second half of April." },
      { from: "bot", text: "Happy to help. Three days in late April: do you have a city in mind, and how many people are coming?" },
      { from: "ada", key: "headcount", text: "Lisbon, like we voted in December. We'll be 12 people, including the two new hires." },
      { from: "bot", text: "Lisbon for 12 people, three days, second half of April. I'll keep that as the working plan." },
      { from: "bo", text: "April 22–24 works for everyone on the engineering side. The 15th clashes with the release freeze." },
      { from: "chen", text: "22–24 is fine for design too. Budget from finance is 1,400 euros per person, travel included." },
      { from: "bot", text: "Noted: April 22–24, budget 1,400 € per person including travel. That leaves roughly 700–800 € for venue and food after flights." },
      { from: "ada", text: "Good. Priorities: one big room for workshops, quiet rooms for 1:1s, and somewhere we can walk to dinner." },
      { from: "bot", text: "Priorities recorded: a workshop room for 12, two or three breakout rooms, walkable dinners. I'll shortlist venues by Wednesday." },
      { from: "bo", text: "Please no venue more than 30 minutes from the airport, half of us fly in on the morning of the 22nd." },
      { from: "bot", text: "Constraint added: at most 30 minutes from Lisbon airport, since many arrive on the morning of April 22." },
    ],
  },
  {
    title: "Wednesday: venues and food",
    day: 2,
    turns: [
      { from: "bot", text: "Shortlist as promised: (1) Casa do Rio in Alcântara, workshop room for 16, 25 min from the airport; (2) LX Factory loft, cheaper but no breakout rooms; (3) Palácio Chiado rooms, beautiful but 2,100 € per day." },
      { from: "chen", text: "Casa do Rio looks right. LX loft without breakout rooms won't work for the 1:1s." },
      { from: "ada", text: "Agreed, Casa do Rio. Can you check if they do catering for lunch, and whether they handle vegetarian and gluten-free?" },
      { from: "bot", key: "catering", text: "Casa do Rio caters lunch at 38 € per person per day; vegetarian is standard and gluten-free needs 48 hours' notice. I'll ask them to hold April 22–24.", lateDelivery: true },
      { from: "bo", text: "Two of us are vegetarian, one is gluten-free (me). Also Chen is allergic to peanuts, please pass that on." },
      { from: "bot", text: "Dietary list: 2 vegetarian, 1 gluten-free (Bo), 1 peanut allergy (Chen). I'll send it with the hold request." },
      { from: "ada", text: "Dinners: first night somewhere relaxed, second night a proper team dinner. Nothing too formal." },
      { from: "bot", text: "Dinner plan: April 22 relaxed (petiscos in Alcântara), April 23 team dinner, smart casual. I'll propose places Friday." },
      { from: "chen", text: "Can we also do one afternoon outside? A walk along the river or a boat would be great after two days of workshops." },
      { from: "bot", text: "Added an outdoor afternoon on April 24: a river walk to Belém, or a Tagus boat trip if the weather holds." },
    ],
  },
  {
    title: "Friday: travel and agenda",
    day: 4,
    turns: [
      { from: "bo", text: "Flights: the Berlin group (5 people) lands at 09:40 on the 22nd, London (4) at 10:15, the rest come by train the night before." },
      { from: "bot", text: "Arrivals: Berlin 5 at 09:40, London 4 at 10:15 on April 22; the others arrive April 21 by train. Workshops can start after lunch on day one." },
      { from: "ada", text: "Agenda draft: day 1 afternoon roadmap review, day 2 full-day design sprint, day 3 morning retro then the outdoor afternoon." },
      { from: "bot", text: "Agenda: April 22 pm roadmap review; April 23 design sprint; April 24 am retro, pm outdoor afternoon. Casa do Rio confirmed the hold until Monday." },
      { from: "chen", text: "For the sprint I need a projector, two whiteboards and lots of sticky notes. Can the venue provide that?" },
      { from: "bot", text: "Casa do Rio provides a projector and one whiteboard; I'd rent a second whiteboard (35 €) and bring sticky notes from the office." },
      { from: "ada", text: "Do it. And book the team dinner for the 23rd, 20:00, somewhere with a private room." },
      { from: "bot", text: "Team dinner: April 23 at 20:00, private room at Taberna do Largo (seats 16, set menu 45 €). Awaiting their confirmation." },
      { from: "bo", text: "Who is handling the airport pickup? A minivan for the Berlin and London groups would save us a lot of time." },
      { from: "bot", text: "Two minivan transfers on April 22: 10:00 for Berlin, 10:30 for London, about 90 € each. Shall I book them?" },
      { from: "ada", text: "Yes, book both transfers." },
    ],
  },
  {
    title: "Next Monday: confirmations",
    day: 7,
    turns: [
      { from: "bot", text: "Confirmed: Casa do Rio April 22–24 with lunch, Taberna do Largo April 23 at 20:00, two airport transfers on April 22, second whiteboard rented." },
      { from: "chen", text: "Great. Can you put together a one-page summary for the people who weren't in this chat?" },
      { from: "bot", text: "I'll draft the one-pager today: dates, venue, arrivals, agenda, dinners, dietary notes and what everyone should bring." },
      { from: "ada", text: "Thanks. One more thing: the budget owner wants the final numbers by Thursday." },
      { from: "bot", text: "Final numbers by Thursday: I'll total venue, food, transfers and rentals per person against the 1,400 € budget." },
    ],
  },
];

/** Ada's correction, sent after Monday's part of the conversation has been compacted. */
export const LATE_EDIT = {
  key: "headcount",
  text: "Lisbon, like we voted in December. We'll be 14 people: the two new hires plus two from the Porto office.",
};

/** The question the composed request ends with. */
export const DEMO_PROMPT = "How many people are coming, where are we staying, and what is still open?";

/**
 * Questions about early facts, each with the words its answer must contain. The demo asks the
 * first one whose answer the served context (boundary + tail) no longer holds, so the answer can
 * only come from the memory pages extracted as the chain settled.
 */
export const MEMORY_QUESTIONS = [
  { question: "Which venue was too far or had no breakout rooms, and what does Chen need for the sprint?", answer: "projector" },
  { question: "Who is allergic to peanuts?", answer: "peanut" },
  { question: "How far from the airport may the venue be?", answer: "30 minutes" },
  { question: "Why not the 15th of April?", answer: "release freeze" },
  { question: "What did finance approve per person?", answer: "1,400" },
];
