10 REM Palindrome test (letters only, case folded)
20 FOR K = 1 TO 5
30   READ S$
40   T$ = ""
50   FOR I = 1 TO LEN(S$)
60     C$ = MID$(S$, I, 1)
70     IF C$ >= "a" AND C$ <= "z" THEN C$ = CHR$(ASC(C$) - 32)
80     IF C$ >= "A" AND C$ <= "Z" THEN T$ = T$ + C$
90   NEXT I
100  R$ = ""
110  FOR I = LEN(T$) TO 1 STEP -1: R$ = R$ + MID$(T$, I, 1): NEXT I
120  IF R$ = T$ THEN PRINT CHR$(34); S$; CHR$(34); " is a palindrome" ELSE PRINT S$; " is not"
130 NEXT K
140 DATA "Racecar", "A man, a plan, a canal: Panama", "Hello", "Was it a car or a cat I saw", "BASIC"
