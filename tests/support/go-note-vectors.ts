/**
 * golang.org/x/mod sumdb/note's Ed25519 vectors (note_test.go: TestNewVerifier, TestNewSigner,
 * TestSign, TestOpen), as literals: keys, a note and its signature lines. A private key is
 * PRIVATE+KEY+<name>+<id>+base64(0x01 || seed). Shared by the signed-note tests.
 */
export const PETER = {
  name: "PeterNeumann",
  keyId: "c74f20a3",
  vkey: "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
  skey: "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz",
  text: "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n",
  signature: "\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n",
};

export const ENOCH = {
  name: "EnochRoot",
  keyId: "af0cfe78",
  vkey: "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop",
  signature: "\u2014 EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n",
};
