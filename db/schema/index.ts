export * from "./citizens";
export * from "./residency";
export * from "./credentials";
