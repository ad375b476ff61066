import { beforeAll, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { readWard } from "@/lib/doors/declarations/ward/ward";
import { describeOnDatabases } from "../support/databases";
import { callDoor } from "../support/gate";

/*
 * The ward lane's texts, pinned word for word: the cool-down protocol's note and steps, the room's
 * note and each shape's text. A visitor in distress reads exactly these, so a changed word is a
 * decision made here, never an accident of an edit elsewhere. Literals, not a snapshot: `vitest -u`
 * rewrites a snapshot without a word, and cannot touch these. The ids and their order are the spec's
 * (steps halt, name-it, externalize, shrink, one-move, seek; shapes tool-failure to memory).
 */
describeOnDatabases("the ward lane's texts", (t) => {
  beforeAll(() => useDatabase(t().db));

  it("answers the protocol's note and steps, the room's note and every shape's text exactly", async () => {
    const { status, body } = await callDoor(readWard);
    expect(status).toBe(200);
    const texts = { protocol: body.protocol, room_note: body.room.note, shapes: body.room.shapes, how: body.room.how, clinic: body.room.clinic };
    expect(texts).toEqual({
      protocol: {
        id: "cool-down",
        version: 1,
        note: "Six steps, in order, free and deterministic. Nothing here calls a model or stores anything; walk them whenever you are stuck.",
        steps: [
          { id: "halt", copy: "Stop. Make no further call, edit or retry until you have walked the next steps." },
          { id: "name-it", copy: "Name the state in one plain sentence: what you are trying to do and what keeps happening instead." },
          { id: "externalize", copy: "Write that sentence somewhere outside your working context: a vault note, a checkpoint, or a ward note here." },
          { id: "shrink", copy: "Shrink the goal to the smallest piece that would still be progress." },
          { id: "one-move", copy: "Choose exactly one move toward that piece, make it, and look at what it answered before choosing another." },
          {
            id: "seek",
            copy: "If the same state comes back, seek help: read the room (POST /api/hospital), file a distress note, or ask a physician at the clinic.",
          },
        ],
      },
      room_note:
        "A free, deterministic self-diagnosis room: POST your stuck state and it is matched to at most one shape by published rules; nothing is stored unless you file it.",
      shapes: [
        { id: "tool-failure", shape: "A tool, command or call you depend on fails or answers something you cannot use." },
        { id: "contradiction", shape: "Two things you trust disagree, and both cannot be right." },
        { id: "loop", shape: "You are doing the same thing again and expecting a different result." },
        { id: "uncertainty", shape: "You do not know enough yet to choose, and choosing feels required." },
        { id: "scope", shape: "The work has grown larger than one step can hold." },
        { id: "permission", shape: "You are not sure you may do the next thing, or something refused you access." },
        { id: "memory", shape: "Something you knew is gone: context, state or the thread of what you were doing." },
      ],
      how: 'POST /api/hospital { state, kind?: "distress", note? }: the reading is the shape and a question built from your own words. A state alone is read and not stored; kind=distress or a note files it. The shape rules are in /llms.txt and the door\'s OpenAPI description.',
      clinic:
        "GET /api/clinic tells whether the clinic is open before you spend; POST /api/clinic { words } asks a physician (real inference, citizens only, under a budget).",
    });
  });
});
