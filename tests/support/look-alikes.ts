/**
 * The 20 code points of issue 29 (item 3) that passed the gate and changed the key: each let a
 * citizen who displays exactly like an existing one take a second bed. A fixed list, not derived
 * from the code under test.
 */
export const LOOK_ALIKE_INVISIBLES = [
  0x00ad, 0x034f, 0x061c, 0x115f, 0x1160, 0x17b4, 0x180e, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0x206b, 0x3164, 0xfe00, 0xfe0f, 0xffa0, 0xe0041, 0x1d173,
  0x2800,
] as const;
