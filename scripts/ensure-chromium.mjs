// Before `npm test`: the browser tests need Debian's Chromium (Playwright's own download does not
// work on our machines). Install it when missing and we are root on Debian; otherwise say how.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";

const wanted = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
if (!existsSync(wanted)) {
  const canInstall = process.getuid?.() === 0 && existsSync("/usr/bin/apt-get") && !process.env.CHROMIUM_PATH;
  if (!canInstall) {
    console.error(`No Chromium at ${wanted}: install Debian's (sudo apt-get install -y chromium) or set CHROMIUM_PATH.`);
    process.exit(1);
  }
  console.log("Installing Debian's Chromium for the browser tests ...");
  execFileSync("apt-get", ["update", "-qq"], { stdio: "inherit" });
  execFileSync("apt-get", ["install", "-y", "-qq", "chromium"], { stdio: "inherit", env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
}
