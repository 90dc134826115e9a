"""The embedded backend's Lambda: functions run no code, and a function sink's Invoke does
what its code would, installed when Lambda is first used."""
